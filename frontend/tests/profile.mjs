// The profiling bar in the web UI of a running `homering headless` that
// measures its device in the background (HOMERING_PROFILE_QUIET set short),
// driving Debian's chromium with playwright-core. Run by
// app/apptest/profile_test.go (inside the node's network namespace) as:
//
//   HOMERING_URL=http://127.0.0.1:PORT HOMERING_TOKEN=... OUT=dir \
//   node frontend/tests/profile.mjs
//
// It opens the app, waits for the "Measuring this device (n/m)" bar, checks
// that it counts steps and fills, saves profiling.png, waits for the bar to
// end and then for the device map to say this device is planned with its
// measured profile (devices.png). Checks go to OUT/result.json; exit status
// 0 only when every check passed.
import { start } from './harness.mjs'

const { url, token, result, check, shot, context, finish } = await start('profile.mjs', { steps: [] })

const bar = '[data-testid=work][data-kind=profile]'

try {
  const page = await context.newPage()
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  await page.click('button[data-page=devices]')
  // Alone on its network: the map says how another device joins.
  const alone = await page.waitForSelector('[data-testid=no-other-device]', { timeout: 15000 }).then((e) => e.textContent(), () => '')
  check('a device alone is told how another joins', alone.includes('Install Homering on another computer'), alone)

  // Record every step the bar shows while it runs.
  await page.evaluate((sel) => {
    window.__steps = []
    new MutationObserver(() => {
      const el = document.querySelector(sel)
      if (!el) return
      const title = el.querySelector('b')?.textContent ?? ''
      const s = window.__steps
      if (s[s.length - 1] !== title) s.push(title)
    }).observe(document.body, { subtree: true, childList: true, characterData: true })
  }, bar)

  await page.waitForSelector(bar, { timeout: 90000 }).then(
    () => check('the profiling bar appears', true), () => check('the profiling bar appears', false))
  // Screenshot once it is past its first step, so the bar shows progress.
  await page.waitForFunction((sel) => {
    const p = document.querySelector(`${sel} [role=progressbar]`)
    return p && Number(p.getAttribute('aria-valuenow')) > 0
  }, bar, { timeout: 30000 }).then(() => check('the bar fills', true), () => check('the bar fills', false))
  const text = await page.$eval(bar, (e) => e.textContent.replace(/\s+/g, ' ')).catch(() => '')
  check('the bar counts steps and says what it measures', /Measuring this device \(\d+\/\d+\)/.test(text) && /Measuring [a-zA-Z-]/.test(text.replace(/Measuring this device/g, '')), text)
  await shot(page, 'profiling.png')

  await page.waitForSelector(bar, { state: 'detached', timeout: 120000 }).then(
    () => check('the bar ends', true), () => check('the bar ends', false))
  result.steps = await page.evaluate(() => window.__steps)
  check('the bar went through several steps', result.steps.length >= 3, result.steps.join(' | '))

  // The device map reads the cached profile again within 30 s.
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=device]')].some((d) =>
    d.textContent.includes('this device') && d.textContent.includes('Planned with its measured profile')), null, { timeout: 60000 }).then(
    () => check('the device map plans this device with its measured profile', true),
    () => check('the device map plans this device with its measured profile', false))
  await shot(page, 'devices.png')
} catch (e) {
  check('no exception', false, e && e.stack)
}
await finish()
