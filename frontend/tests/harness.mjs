// What the web UI scripts (e2e.mjs, profile.mjs) share: the environment
// app/apptest runs them with, the checks and screenshots they record in
// OUT/result.json, and a fresh headless chromium (Debian's, or $CHROMIUM)
// driven by playwright-core.
import { chromium } from 'playwright-core'
import { mkdtempSync, writeFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// start reads HOMERING_URL, HOMERING_TOKEN and OUT (exiting with status 2,
// naming them, when one is missing) and launches chromium. result holds
// extra's fields beside checks and screenshots. finish writes result.json,
// closes the browser and exits: status 0 only when every check passed.
export async function start(script, extra = {}) {
  const url = process.env.HOMERING_URL
  const token = process.env.HOMERING_TOKEN
  const out = process.env.OUT
  if (!url || !token || !out) {
    console.error(`${script}: set HOMERING_URL, HOMERING_TOKEN and OUT`)
    process.exit(2)
  }

  const result = { checks: [], screenshots: [], ...extra }
  let failed = false
  function check(name, ok, detail = '') {
    result.checks.push({ name, ok: !!ok, detail: String(detail) })
    if (!ok) failed = true
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`)
  }

  // A fresh profile per run (playwright passes it as --user-data-dir).
  const profile = mkdtempSync(join(tmpdir(), 'homering-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 820 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })

  async function shot(page, name) {
    const file = join(out, name)
    await page.screenshot({ path: file, fullPage: false })
    const size = statSync(file).size
    check(`screenshot ${name} written`, size > 5000, `${size} bytes`)
    result.screenshots.push(file)
  }

  async function finish() {
    writeFileSync(join(out, 'result.json'), JSON.stringify(result, null, 2))
    await context.close()
    rmSync(profile, { recursive: true, force: true })
    process.exit(failed ? 1 : 0)
  }

  return { url, token, out, result, check, shot, context, finish }
}
