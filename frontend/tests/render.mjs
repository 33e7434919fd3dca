// How a reply's Markdown shows in the web UI, and the dark theme, driving
// Debian's chromium with playwright-core. Run by app/apptest
// TestWebUIMarkdown (inside the node's network namespace) with
// HOMERING_URL, HOMERING_TOKEN and OUT. A conversation is saved through the
// control API with a reply holding a table, nested lists, strikethrough,
// highlighted code and hostile HTML, then opened from the history as a
// person would. Checks go to OUT/result.json; exit status 0 only when every
// check passed.
import { start } from './harness.mjs'

const { url, token, check, shot, context, finish } = await start('render.mjs')

const reply = [
  'A table:',
  '',
  '| Device | Layers |',
  '| --- | --- |',
  '| kitchen | 0-15 |',
  '| study | 16-31 |',
  '',
  '- fruit',
  '  - apple',
  '  - pear',
  '- ~~old~~ new',
  '',
  '```go',
  'func main() { fmt.Println("hi") }',
  '```',
  '',
  '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">',
  '[bad](javascript:window.__pwned=3) and [good](https://example.com)',
].join('\n')

try {
  const page = await context.newPage()
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  const now = new Date().toISOString()
  const put = await page.evaluate(async (c) => (await fetch('api/v1/conversations/' + c.id, {
    method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(c),
  })).status, { id: 'render-test', title: 'Markdown', system: '', model: '', created: now, updated: now,
    messages: [{ role: 'user', content: 'Show me' }, { role: 'assistant', content: reply }] })
  check('conversation saved through the API', put === 200, `HTTP ${put}`)
  await page.reload()
  await page.click('[data-testid=history] button.title')
  const md = '[data-role=assistant] .md'
  await page.waitForSelector(md, { timeout: 10000 })
  const got = await page.$eval(md, (e) => ({
    rows: e.querySelectorAll('table tbody tr').length,
    heads: [...e.querySelectorAll('table th')].map((x) => x.textContent),
    nested: e.querySelectorAll('ul li ul li').length,
    del: e.querySelector('del')?.textContent ?? '',
    lang: e.querySelector('pre')?.dataset.lang ?? '',
    keyword: e.querySelector('pre code .hljs-keyword')?.textContent ?? '',
    scripts: e.querySelectorAll('script, img, [onerror]').length,
    shown: e.textContent.includes('<script>window.__pwned = 1</script>'),
    badHref: e.querySelectorAll('a:not([href^="https://"])').length,
    good: e.querySelector('a[href="https://example.com"]')?.getAttribute('rel') ?? '',
  }))
  check('a table renders', got.rows === 2 && got.heads.join(',') === 'Device,Layers', JSON.stringify(got))
  check('nested lists render', got.nested === 2)
  check('strikethrough renders', got.del === 'old')
  check('code is highlighted', got.lang === 'go' && got.keyword === 'func', `${got.lang}: ${got.keyword}`)
  check('HTML shows as text: no script, image or handler reaches the page', got.scripts === 0 && got.shown && (await page.evaluate(() => window.__pwned)) === undefined)
  check('links: only http(s), in a new tab without a way back', got.badHref === 0 && got.good === 'noopener noreferrer', JSON.stringify(got))
  await context.grantPermissions(['clipboard-read', 'clipboard-write']).catch(() => {})
  await page.click('[data-testid=copy-code]')
  const clip = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => `unreadable: ${e}`)
  check("a code block's Copy puts its code on the clipboard", clip.trim() === 'func main() { fmt.Println("hi") }', clip)
  await shot(page, 'markdown.png')

  // The system's dark setting: the same page, dark.
  const light = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)
  await page.emulateMedia({ colorScheme: 'dark' })
  const dark = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)
  check('a dark theme follows the system setting', light !== dark && dark === 'rgb(21, 24, 28)', `${light} → ${dark}`)
  await shot(page, 'dark.png')

  // A reasoning model's answer (issue 20 item 3): its thinking is saved
  // with it and shown folded above it, the answer outside the fold.
  const t2 = new Date().toISOString()
  const put2 = await page.evaluate(async (c) => (await fetch('api/v1/conversations/' + c.id, {
    method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(c),
  })).status, { id: 'think-test', title: 'Sums', system: '', model: '', created: t2, updated: t2,
    messages: [{ role: 'user', content: 'What is 2+2?' }, { role: 'assistant', content: 'It is **4**.', thinking: 'Add two and two.' }] })
  check('a conversation with thinking saved through the API', put2 === 200, `HTTP ${put2}`)
  await page.reload()
  await page.click('[data-testid=history] button.title:has-text("Sums")')
  await page.waitForSelector('[data-testid=thinking]', { timeout: 10000 })
  const folded = await page.$eval('[data-role=assistant]', (e) => {
    const d = e.querySelector('[data-testid=thinking]')
    const thought = d?.querySelector('.thought')
    const md = e.querySelector('.md')
    return {
      open: d?.open, summary: d?.querySelector('summary')?.textContent ?? '',
      hidden: thought ? !thought.checkVisibility() : null,
      thought: thought?.textContent ?? '', answer: md?.textContent ?? '', answerInFold: !!(md && d && d.contains(md)),
      above: !!(d && md && (d.compareDocumentPosition(md) & Node.DOCUMENT_POSITION_FOLLOWING)),
    }
  })
  check('thinking is folded by default under "Thinking", above the answer',
    folded.open === false && folded.summary === 'Thinking' && folded.hidden === true && folded.above && !folded.answerInFold, JSON.stringify(folded))
  check('the answer shows outside the fold', folded.answer.trim() === 'It is 4.', JSON.stringify(folded))
  await page.click('[data-testid=thinking] summary')
  const opened = await page.$eval("[data-testid=thinking] .thought", (e) => ({ text: e.textContent, shown: e.checkVisibility() }))
  check('a click unfolds the thinking', opened.text === "Add two and two." && opened.shown, JSON.stringify(opened))
  await shot(page, 'thinking.png')
} catch (e) {
  check('render.mjs ran to the end', false, e && e.stack ? e.stack : e)
}
await finish()
