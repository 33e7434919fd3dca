// An open page of the web UI across a restart of the agent, driving Debian's
// chromium with playwright-core. Run by app/apptest TestWebUIReconnect
// (inside the node's network namespace) as:
//
//   HOMERING_URL=… HOMERING_TOKEN=… OUT=dir READY_FILE=path node frontend/tests/reconnect.mjs
//
// It opens the app, waits until the live stream shows this device, writes
// READY_FILE (the test then stops and starts the agent), and checks that the
// page says it lost the connection, then reconnects by itself: the banner
// goes, the device shows again and the page's cookie still opens the API,
// with no reload. Checks go to OUT/result.json; exit status 0 only when
// every check passed.
import { writeFileSync } from 'node:fs'
import { start } from './harness.mjs'

const { url, token, check, shot, context, finish } = await start('reconnect.mjs')
const banner = 'text=Lost the connection to Homering.'

try {
  const page = await context.newPage()
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  await page.waitForFunction(() => /devices? seen/.test(document.querySelector('.foot')?.textContent ?? ''), null, { timeout: 30000 })
  check('the live stream shows this device', true)
  await page.evaluate(() => { window.__loaded = performance.timeOrigin })
  writeFileSync(process.env.READY_FILE, 'ready\n')

  await page.waitForSelector(banner, { timeout: 30000 }).then(
    () => check('the page says it lost the connection while the agent is down', true),
    () => check('the page says it lost the connection while the agent is down', false))
  await page.waitForSelector(banner, { state: 'detached', timeout: 90000 }).then(
    () => check('the page reconnects by itself after the restart', true),
    () => check('the page reconnects by itself after the restart', false))
  const foot = await page.$eval('.foot', (e) => e.textContent.replace(/\s+/g, ' ')).catch(() => '')
  check('the device shows again', /devices? seen/.test(foot), foot)
  const same = await page.evaluate(() => window.__loaded === performance.timeOrigin)
  check('no reload: the same page', same)
  const st = await page.evaluate(() => fetch('api/v1/settings').then((r) => r.status))
  check("the page's cookie still opens the API", st === 200, `HTTP ${st}`)
  await shot(page, 'reconnected.png')
} catch (e) {
  check('reconnect.mjs ran to the end', false, e && e.stack ? e.stack : e)
}
await finish()
