// Downloading a model from the Models page of a running `homering headless`
// (issue 18 item 6), driving Debian's chromium with playwright-core. Run by
// app/apptest/pull_test.go inside the node's network namespace as:
//
//   HOMERING_URL=http://127.0.0.1:PORT HOMERING_TOKEN=... OUT=dir \
//   GGUF_FILE=path/to/model.gguf node frontend/tests/pull.mjs
//
// It serves GGUF_FILE itself on loopback, with Range and an ETag that is
// its SHA-256, slowly enough for the bar to be seen, under three names:
// tiny.gguf (plain), cut.gguf (the first answer drops the connection
// halfway; the agent resumes with Range) and bad.gguf (the ETag is a wrong
// SHA-256). Through the page it downloads each and checks: the progress
// bar shows, tiny and cut end verified and are listed, bad is refused with
// the checksum sentence and is not listed. Then it drops a .gguf on the
// window (a synthetic drop of a File) and sees it added and listed, and a
// .txt refused; last, Settings' Browse picks MODEL_DIR. Checks go to OUT/result.json;
// exit status 0 only when every check passed.
import { createServer } from 'node:http'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { start } from './harness.mjs'

const file = process.env.GGUF_FILE
if (!file) { console.error('pull.mjs: set GGUF_FILE'); process.exit(2) }
const body = readFileSync(file)
const sha = createHash('sha256').update(body).digest('hex')

const { url, token, result, check, shot, context, finish } = await start('pull.mjs', { requests: [] })

// The local "model host": Range, ETag, a cut, a wrong checksum.
let cutDone = false
const host = createServer(async (req, res) => {
  const name = req.url.slice(1)
  result.requests.push(`${name} ${req.headers.range ?? ''}`)
  if (name === 'raw') { // the bytes for the page to drop, across origins
    res.writeHead(200, { 'Access-Control-Allow-Origin': '*', 'Content-Length': body.length })
    res.end(body)
    return
  }
  if (!['tiny.gguf', 'cut.gguf', 'bad.gguf'].includes(name)) { res.writeHead(404); res.end('not found'); return }
  const etag = name === 'bad.gguf' ? 'ab'.repeat(32) : sha
  let from = 0
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
  const headers = { ETag: `"${etag}"`, 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream' }
  if (m && (!req.headers['if-range'] || req.headers['if-range'] === `"${etag}"`)) {
    from = Number(m[1])
    res.writeHead(206, { ...headers, 'Content-Range': `bytes ${from}-${body.length - 1}/${body.length}`, 'Content-Length': body.length - from })
  } else {
    res.writeHead(200, { ...headers, 'Content-Length': body.length })
  }
  const cutAt = name === 'cut.gguf' && !cutDone ? Math.floor(body.length / 2) : -1
  if (cutAt >= 0) cutDone = true
  // Slowly: about 2 s for the file, so the bar is on screen.
  const chunk = Math.max(4096, Math.ceil(body.length / 40))
  for (let at = from; at < body.length; at += chunk) {
    if (cutAt >= 0 && at >= cutAt) { res.destroy(); return }
    res.write(body.subarray(at, Math.min(at + chunk, body.length)))
    await new Promise((r) => setTimeout(r, 50))
  }
  res.end()
})
await new Promise((r) => host.listen(0, '127.0.0.1', r))
const base = `http://127.0.0.1:${host.address().port}`

try {
  const page = await context.newPage()
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  await page.click('button[data-page=models]')
  await page.waitForSelector('[data-testid=pull-ref]')

  async function download(name) {
    await page.fill('[data-testid=pull-ref]', `${base}/${name}`)
    await page.click('[data-testid=pull-start]')
    await page.waitForSelector('[data-testid=pull-result]', { state: 'detached', timeout: 5000 })
    const r = await page.waitForSelector('[data-testid=pull-result]', { timeout: 60000 })
    return { state: await r.getAttribute('data-state'), text: await r.textContent() }
  }

  // tiny.gguf: the bar shows while it runs, then it is listed.
  await page.fill('[data-testid=pull-ref]', `${base}/tiny.gguf`)
  await page.click('[data-testid=pull-start]')
  const bar = await page.waitForSelector('[data-testid=work][data-kind=download]', { timeout: 20000 }).catch(() => null)
  check('the download shows a progress bar', bar)
  if (bar) {
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=work][data-kind=download] [role=progressbar]')?.getAttribute('aria-valuenow') ?? 0) > 0, null, { timeout: 20000 }).then(
      () => check('the bar fills', true), () => check('the bar fills', false))
    await shot(page, 'downloading.png')
  }
  const r1 = await page.waitForSelector('[data-testid=pull-result]', { timeout: 60000 })
  const tiny = { state: await r1.getAttribute('data-state'), text: await r1.textContent() }
  check('tiny.gguf is downloaded and verified', tiny.state === 'done' && /matches the SHA-256/.test(tiny.text), tiny.text)
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=model-row] td:first-child')].some((td) => td.textContent === 'tiny'), null, { timeout: 20000 }).then(
    () => check('tiny is listed in Models', true), () => check('tiny is listed in Models', false))
  await shot(page, 'downloaded.png')

  // cut.gguf: the connection drops halfway; the agent resumes it.
  const cut = await download('cut.gguf')
  check('cut.gguf is resumed and verified', cut.state === 'done' && /matches the SHA-256/.test(cut.text), cut.text)
  check('the resume asked for the rest with Range', result.requests.some((q) => /^cut\.gguf bytes=\d+-$/.test(q)), result.requests.join('; '))

  // bad.gguf: the published checksum is wrong; refused, not listed.
  const bad = await download('bad.gguf')
  check('bad.gguf is refused for its checksum', bad.state === 'failed' && /does not match the SHA-256/.test(bad.text), bad.text)
  await shot(page, 'refused.png')
  await page.click('button:has-text("Scan again")')
  await page.waitForSelector('button:has-text("Scan again"):not([disabled])')
  const names = await page.$$eval('[data-testid=model-row] td:first-child', (tds) => tds.map((td) => td.textContent))
  check('Models lists tiny and cut, not bad', names.includes('tiny') && names.includes('cut') && !names.includes('bad'), names.join(', '))

  // Drag and drop: a .gguf dropped on the window is added; a .txt is not.
  async function drop(name, src) {
    await page.evaluate(async ({ name, src }) => {
      const b = src ? await (await fetch(src)).arrayBuffer() : new TextEncoder().encode('notes')
      const dt = new DataTransfer()
      dt.items.add(new File([b], name))
      for (const type of ['dragover', 'drop']) {
        document.body.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }))
      }
    }, { name, src })
    const r = await page.waitForSelector('[data-testid=drop-result]', { timeout: 30000 })
    return { ok: await r.getAttribute('data-ok'), text: await r.textContent() }
  }
  await page.click('button[data-page=chat]')
  const dropped = await drop('dropped.gguf', `${base}/raw`)
  check('a dropped .gguf is added', dropped.ok === 'true' && /dropped\.gguf is in the model folder/.test(dropped.text), dropped.text)
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=model-row] td:first-child')].some((td) => td.textContent === 'dropped'), null, { timeout: 20000 }).then(
    () => check('the drop opens Models and lists it', true), () => check('the drop opens Models and lists it', false))
  await shot(page, 'dropped.png')
  await page.click('[data-testid=drop-result] button')
  const notes = await drop('notes.txt', '')
  check('a dropped .txt is refused', notes.ok === 'false' && /not a \.gguf file/.test(notes.text), notes.text)

  // Settings: the model folder's Browse opens where the setting points,
  // goes up and back in, and Use this folder fills the field.
  const dir = process.env.MODEL_DIR
  if (dir) {
    await page.click('button[data-page=settings]')
    await page.click('[data-testid=browse]')
    const at = await page.waitForSelector('[data-testid=picker-path]', { timeout: 10000 })
    check('Browse opens at the model folder', (await at.textContent()) === dir, await at.textContent())
    await page.click('[data-testid=picker-up]')
    const base = dir.split('/').pop()
    await page.waitForSelector(`[data-testid=picker-folder]:text-is("${base}")`, { timeout: 10000 })
    await page.click(`[data-testid=picker-folder]:text-is("${base}")`)
    await page.waitForFunction((d) => document.querySelector('[data-testid=picker-path]')?.textContent === d, dir, { timeout: 10000 })
    await page.click('[data-testid=picker-use]')
    await shot(page, 'browse.png')
    check('Use this folder fills the model folder field', (await page.inputValue('#dir')) === dir, await page.inputValue('#dir'))
  }
} catch (e) {
  check('the script ran to its end', false, e.stack || e)
}
host.close()
await finish()
