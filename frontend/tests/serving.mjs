// A contributing device's web UI while it serves another head's chat
// (issue 18 item 7). Run by app/apptest TestWebUI (inside the worker's
// network namespace) as:
//
//   HOMERING_URL=… HOMERING_TOKEN=… OUT=dir EXPECT_HEAD=name node frontend/tests/serving.mjs
//
// after the head ran a ring chat that keeps this device's job: the sidebar
// says whose chat it serves (or holds) and which layers. Checks go to
// OUT/result.json; exit status 0 only when every check passed.
import { start } from './harness.mjs'

const { url, token, check, shot, context, finish } = await start('serving.mjs')
const head = process.env.EXPECT_HEAD

try {
  const page = await context.newPage()
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  const text = await page.waitForSelector('[data-serving]', { timeout: 30000 }).then((e) => e.textContent(), () => '')
  check(`the sidebar says it serves ${head}'s chat, with its layers`,
    new RegExp(`^(Serving|Holding) ${head}'s chat: layers \\d`).test(text.trim()), text.trim())
  await shot(page, 'serving.png')
} catch (e) {
  check('serving.mjs ran to the end', false, e && e.stack ? e.stack : e)
}
await finish()
