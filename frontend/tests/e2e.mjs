// End-to-end check of the web UI against a running `homering headless`,
// driving Debian's chromium with playwright-core. Run by
// app/apptest/webui_test.go (inside the head's network namespace) as:
//
//   HOMERING_URL=http://127.0.0.1:PORT HOMERING_TOKEN=... OUT=dir \
//   EXPECT_DEVICES=3 node frontend/tests/e2e.mjs
//
// It opens the app with the token link, sends a chat message and checks that
// the reply streams in (several distinct partial lengths seen before it is
// done), opens the device map and checks every device, the ring order, the
// layer windows and the memory gauge, then visits Models and Settings. Each
// step saves a screenshot under OUT and appends to OUT/result.json. Exit
// status 0 only when every check passed.
import { start } from './harness.mjs'
import { execFileSync } from 'node:child_process'

const expectDevices = Number(process.env.EXPECT_DEVICES || '1')
const prompt = process.env.PROMPT || 'Once upon a time'
const { url, token, result, check, shot, context, finish } = await start('e2e', { streamed_lengths: [] })

try {
  const page = await context.newPage()
  const consoleErrors = []
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()) })
  page.on('pageerror', (e) => consoleErrors.push(String(e)))

  // 1. Token link → cookie → app. The token must not stay in the URL or be
  // readable by scripts.
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  check('token dropped from the address bar', !page.url().includes('token='), page.url())
  const cookies = await context.cookies()
  const c = cookies.find((x) => x.name === 'homering_token')
  check('token cookie is HttpOnly and SameSite=Strict', c && c.httpOnly && c.sameSite === 'Strict', JSON.stringify(c && { httpOnly: c.httpOnly, sameSite: c.sameSite }))
  check('scripts cannot read the token', !(await page.evaluate(() => document.cookie)).includes('homering_token'))
  await page.waitForSelector('nav .foot .dot', { timeout: 15000 })
  check('live stream connected', true)
  // A first run (no conversation yet) greets with what Homering is, this
  // device's name, and where models and more devices come from.
  const name = await page.$eval('nav .foot > div', (e) => e.textContent.trim()).catch(() => '')
  const welcome = await page.waitForSelector('[data-testid=welcome]', { timeout: 5000 }).then((e) => e.textContent(), () => '')
  check('first run: a welcome naming this device, with links to Models and Devices',
    name.length > 0 && welcome.includes(name) && !!(await page.$('[data-testid=welcome] a[href="#models"]')) && !!(await page.$('[data-testid=welcome] a[href="#devices"]')),
    `${name}: ${welcome.replace(/\s+/g, ' ').slice(0, 160)}`)

  // 2. Chat: send, watch the reply grow token by token.
  await page.waitForSelector('[data-testid=model-picker] option[value$=".gguf"]', { state: 'attached', timeout: 20000 })
  const picked = await page.$eval('[data-testid=model-picker]', (s) => s.value)
  check('model picker has the selected model', picked.endsWith('.gguf'), picked)
  await page.evaluate(() => {
    // Record every distinct length of the streaming reply, and whether the
    // stop button was ever on screen: a reply that comes fast on a loaded
    // machine can be done before a later poll for either would look.
    window.__lengths = []
    window.__sawStop = false
    new MutationObserver(() => {
      if (document.querySelector('[data-testid=stop]')) window.__sawStop = true
      const all = document.querySelectorAll('[data-role=assistant] .md')
      const last = all[all.length - 1]
      if (!last) return
      const n = last.textContent.length
      if (n && window.__lengths[window.__lengths.length - 1] !== n) window.__lengths.push(n)
    }).observe(document.body, { subtree: true, childList: true, characterData: true })
  })
  await page.fill('[data-testid=composer]', prompt)
  await page.click('[data-testid=send]')
  await page.waitForSelector('[data-testid=regenerate], [data-testid=chat-error]', { timeout: 120000 })
  check('stop button shown while generating', await page.evaluate(() => window.__sawStop))
  const err = await page.$('[data-testid=chat-error]')
  check('chat finished without an error', !err, err ? await err.textContent() : '')
  const reply = await page.$$eval('[data-role=assistant] .md', (els) => els.map((e) => e.textContent).pop() || '')
  const lengths = await page.evaluate(() => window.__lengths)
  result.streamed_lengths = lengths
  result.reply = reply
  check('reply has text', reply.trim().length > 0, JSON.stringify(reply.slice(0, 80)))
  // Two lengths prove the reply was on screen before it was whole; a busy
  // browser may paint several tokens at once, so more is not required. A
  // short greedy story can arrive whole in one read on a loaded machine:
  // then the long story below, on screen before Stop, is the proof.
  const streamedFirst = lengths.length >= 2
  check('user message shown', (await page.$$eval('[data-role=user]', (e) => e.map((x) => x.textContent))).some((t) => t.includes(prompt)))
  await page.waitForSelector('[data-testid=history] li button.title', { timeout: 5000 })
  check('conversation saved in history', (await page.$$('[data-testid=history] li button.title')).length >= 1)
  await shot(page, 'chat.png')

  // Regenerate replaces the reply with a new stream.
  const firstReply = reply
  await page.click('[data-testid=regenerate]')
  await page.waitForSelector('[data-testid=stop]', { timeout: 5000 }).catch(() => {})
  await page.waitForSelector('[data-testid=regenerate], [data-testid=chat-error]', { timeout: 120000 })
  const replies = await page.$$eval('[data-role=assistant] .md', (els) => els.map((e) => e.textContent))
  check('regenerate streams one new reply in place', replies.length === 1 && replies[0].trim().length > 0 && !(await page.$('[data-testid=chat-error]')),
    `${replies.length} replies; same as before: ${replies[0] === firstReply}`)

  // Stop ends a long generation early.
  // A story can end by itself before Stop is clicked: try a few times.
  await page.click('button[data-testid=params-toggle]')
  await page.fill('#maxt', '100000')
  // At temperature 2 with top-p 1 the end-of-story token is rarely drawn,
  // so the reply runs long enough to be stopped (greedy stories end fast).
  const setRange = (sel, v) => page.$eval(sel, (e, v) => { e.value = v; e.dispatchEvent(new Event('input', { bubbles: true })) }, v)
  await setRange('#temp', '2')
  await setRange('#topp', '1')
  let t0 = 0
  for (let attempt = 0; attempt < 4 && !t0; attempt++) {
    await page.click('button.new')
    await page.fill('[data-testid=composer]', 'Tell me a very long story')
    // Stop is clicked in the page the moment the first text shows: a
    // context-long story of stories260K can end in ~40 ms, faster than a
    // round trip from here to click it.
    await page.evaluate(() => {
      window.__stopAt = 0
      const obs = new MutationObserver(() => {
        const md = document.querySelector('[data-role=assistant] .md')
        const stop = document.querySelector('[data-testid=stop]')
        if (md && md.textContent.length > 0 && stop) {
          obs.disconnect()
          stop.click()
          window.__stopAt = Date.now()
        }
      })
      obs.observe(document.body, { subtree: true, childList: true, characterData: true })
      window.__stopObs = obs
    })
    await page.click('[data-testid=send]')
    await page.waitForFunction(() => {
      const all = document.querySelectorAll('[data-role=assistant] .md')
      return window.__stopAt > 0 || document.querySelector('[data-testid=chat-error]') ||
        (all.length === 1 && all[0].textContent.length > 0 && document.querySelector('[data-testid=send]'))
    }, null, { timeout: 60000 })
    const stopErr = await page.$('[data-testid=chat-error]')
    if (stopErr) throw new Error('chat failed before stop: ' + (await stopErr.textContent()))
    t0 = await page.evaluate(() => { window.__stopObs.disconnect(); return window.__stopAt })
    if (!t0) await page.waitForSelector('[data-testid=send]', { timeout: 60000 })
  }
  check('stop clicked while generating', t0 > 0)
  check('reply streamed in pieces', streamedFirst || t0 > 0,
    `distinct lengths of the first reply: ${lengths.length}; the long story ${t0 > 0 ? 'was on screen while generating' : 'was never stopped'}`)
  await page.waitForSelector('[data-testid=send]', { timeout: 10000 })
  const stopMs = Date.now() - t0
  const lenAtStop = await page.$eval('[data-role=assistant] .md', (e) => e.textContent.length)
  await page.waitForTimeout(1000)
  const lenLater = await page.$eval('[data-role=assistant] .md', (e) => e.textContent.length)
  result.stop_ms = stopMs
  check('stop ends the stream', lenLater === lenAtStop && !(await page.$('[data-testid=chat-error]')), `${stopMs} ms to the Send button; ${lenAtStop} → ${lenLater} chars`)
  await page.fill('#maxt', '256')

  // Replies are rendered as Markdown with HTML escaped: a saved reply with
  // markup and a script-bearing tag shows as text, formatting applied.
  const evil = { title: 'Markdown check', system: '', model: '', messages: [
    { role: 'user', content: 'format please' },
    { role: 'assistant', content: '**bold** and `code`\n\n- one\n- two\n\n<img src=x onerror="window.__pwned=1"> [link](javascript:alert(1))' }] }
  await page.evaluate((c) => fetch('api/v1/conversations/mdcheck', { method: 'PUT', body: JSON.stringify(c), headers: { 'Content-Type': 'application/json' } }), evil)
  await page.click('button[data-page=devices]')
  await page.click('button[data-page=chat]')
  await page.click('[data-testid=history] li button.title >> text=Markdown check')
  await page.waitForSelector('[data-role=assistant] .md strong', { timeout: 5000 }).catch(() => {})
  const md = await page.$eval('[data-role=assistant] .md', (e) => ({
    strong: e.querySelectorAll('strong').length, code: e.querySelectorAll('code').length, li: e.querySelectorAll('li').length,
    img: e.querySelectorAll('img').length, a: e.querySelectorAll('a').length, text: e.textContent,
  }))
  check('markdown rendered (bold, code, list)', md.strong === 1 && md.code === 1 && md.li === 2, JSON.stringify(md))
  check('HTML in replies is escaped, javascript: links dropped', md.img === 0 && md.a === 0 && md.text.includes('<img') &&
    !(await page.evaluate(() => window.__pwned)), JSON.stringify(md))

  // Rename and delete from the history list.
  const item = page.locator('[data-testid=history] li', { hasText: 'Markdown check' })
  await item.locator('button[title=Rename]').click()
  await page.fill('[data-testid=history] li input', 'Renamed chat')
  await page.press('[data-testid=history] li input', 'Enter')
  await page.waitForSelector('[data-testid=history] li button.title >> text=Renamed chat', { timeout: 5000 }).then(
    () => check('rename in history', true), () => check('rename in history', false))
  await page.locator('[data-testid=history] li', { hasText: 'Renamed chat' }).locator('button[title=Delete]').click()
  const gone = () => page.waitForFunction(() => ![...document.querySelectorAll('[data-testid=history] li')].some((l) => l.textContent.includes('Renamed chat')), null, { timeout: 5000 }).then(() => true, () => false)
  check('delete in history', await gone())
  // A delete can be undone for some seconds; then the toast goes and the
  // delete stands.
  const toast = await page.waitForSelector('[data-testid=undo-toast]', { timeout: 5000 }).then((e) => e.textContent(), () => '')
  check('a delete shows an Undo toast naming the chat', toast.includes('Renamed chat') && toast.includes('Undo'), toast)
  await page.click('[data-testid=undo]')
  const back = await page.waitForSelector('[data-testid=history] li button.title >> text=Renamed chat', { timeout: 5000 }).then(() => true, () => false)
  const onDisk = await page.evaluate(() => fetch('api/v1/conversations').then((r) => r.json()))
  check('Undo brings the chat back, with its messages', back && onDisk.some((c) => c.title === 'Renamed chat' && c.messages >= 2), JSON.stringify(onDisk))
  await page.locator('[data-testid=history] li', { hasText: 'Renamed chat' }).locator('button[title=Delete]').click()
  const deletedAt = Date.now()
  check('delete again', await gone())
  const left = await page.waitForSelector('[data-testid=undo-toast]', { state: 'detached', timeout: 20000 }).then(() => true, () => false)
  const after = await page.evaluate(() => fetch('api/v1/conversations').then((r) => r.json()))
  check('the Undo toast goes after some seconds and the delete stands', left && !after.some((c) => c.title === 'Renamed chat'), `${Date.now() - deletedAt} ms, ${JSON.stringify(after)}`)
  const saved = await page.evaluate(() => fetch('api/v1/conversations').then((r) => r.json()))
  check('history kept on disk by the agent', saved.length >= 2 && saved.every((c) => c.messages >= 2), JSON.stringify(saved))

  // 3. Device map.
  await page.click('button[data-page=devices]')
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid=device]').length >= n, expectDevices, { timeout: 30000 }).catch(() => {})
  const devices = await page.$$eval('[data-testid=device]', (els) => els.map((e) => ({
    short: e.dataset.device,
    text: e.textContent.replace(/\s+/g, ' '),
    role: e.querySelector('[data-testid=role]')?.textContent,
    windows: e.querySelectorAll('[data-testid=window], [data-testid=window-gpu]').length,
    memory: !!e.querySelector('.gauge'),
  })))
  result.devices = devices
  check(`device map shows ${expectDevices} devices`, devices.length === expectDevices, devices.map((d) => `${d.short}:${d.role}`).join(' '))
  check('this device is marked', devices.some((d) => d.text.includes('this device')))
  // Two devices with the same host name are told apart by their short IDs.
  const same = process.env.EXPECT_SAME_NAME
  if (same) {
    const labels = await page.$$eval('[data-testid=device-name]', (els) => els.map((e) => e.textContent))
    const twins = labels.filter((l) => l.startsWith(same))
    check(`devices named ${same} are told apart`, twins.length === 2 && twins[0] !== twins[1] && twins.every((l) => / · \S+$/.test(l)) &&
      labels.filter((l) => !l.startsWith(same)).every((l) => !l.includes(' · ')), JSON.stringify(labels))
  }
  // The header stays above the ring card, and k and the memory cases are
  // explained in plain words.
  const layout = await page.evaluate(() => {
    const top = document.querySelector('[data-testid=device-map] .top')?.getBoundingClientRect()
    const ring = document.querySelector('[data-testid=ring-order]')?.getBoundingClientRect()
    return top && ring ? { topBottom: top.bottom, ringTop: ring.top } : null
  })
  check('the Devices header does not overlap the ring card', layout && layout.topBottom <= layout.ringTop, JSON.stringify(layout))
  await page.click('[data-testid=explain] summary')
  const explain = await page.textContent('[data-testid=explain]')
  check('k and the memory cases are explained', /k is how many times each token goes around the ring/.test(explain) && /M4: they fit in its memory/.test(explain), explain.slice(0, 200))
  check('a head is planned', devices.some((d) => d.role === 'head'))
  check('layer windows drawn', devices.some((d) => d.windows > 0))
  // The head's card: the cards' order is the ring's, and a worker may come first.
  const headMs = await page.$$eval('[data-testid=device]', (els) => {
    const head = els.find((e) => e.querySelector('[data-testid=role]')?.textContent === 'head')
    const text = (id) => head?.querySelector(`[data-testid=${id}]`)?.textContent ?? ''
    return { measured: text('measured'), predicted: text('predicted') }
  })
  const { measured, predicted } = headMs
  result.head_ms = { predicted, measured }
  check('head shows predicted and measured ms/token (from the chats above)', /^\d/.test(predicted) && /^\d/.test(measured), `predicted ${predicted}, measured ${measured}`)
  check('ring order shown', !!(await page.$('[data-testid=ring-order]')))
  // The plan the next chat runs and what the last chat ran are told apart.
  const labels = await page.$eval('[data-testid=device-map]', (e) => e.textContent.replace(/\s+/g, ' ')).catch(() => '')
  check('device map labels the next chat and the last chat', /Next chat:/.test(labels) && /Last chat/.test(labels) && /measured · last chat/.test(labels), labels.slice(0, 300))
  check('memory gauge for this device', devices.some((d) => d.memory))
  if (expectDevices > 1) check('peers shown as paired', devices.filter((d) => d.text.includes('paired') && !d.text.includes('not paired')).length >= expectDevices - 1)
  if (expectDevices > 1) {
    // Link RTT is measured over a real link to each paired peer.
    const rtts = await page.waitForFunction(() => {
      const v = [...document.querySelectorAll('[data-testid=device]')]
        .filter((e) => !e.textContent.includes('this device'))
        .map((e) => e.querySelector('[data-testid=rtt]')?.textContent || '')
      return v.every((t) => /^\d/.test(t)) ? v : null
    }, null, { timeout: 15000 }).then((h) => h.jsonValue(), () => null)
    result.rtt_ms = rtts
    check('link RTT measured for every peer', rtts !== null, JSON.stringify(rtts))
    // Each paired peer reports its memory with every look (app/api rtt.go).
    const gauges = await page.waitForFunction(() => {
      const els = [...document.querySelectorAll('[data-testid=device]')]
      return els.every((e) => e.querySelector('.gauge')) ? els.length : null
    }, null, { timeout: 15000 }).then((h) => h.jsonValue(), () => null)
    check('memory gauge for every device', gauges !== null, `${gauges} of ${expectDevices}`)
  }
  // Live: the memory history grows from heartbeats without a reload.
  const before = await page.$eval('.spark polyline', (p) => p.getAttribute('points')?.split(' ').length || 0).catch(() => 0)
  await page.waitForFunction((b) => (document.querySelector('.spark polyline')?.getAttribute('points')?.split(' ').length || 0) > b, before, { timeout: 10000 }).then(
    () => check('device map updates live', true),
    () => check('device map updates live', false, `points stayed ${before}`))
  await shot(page, 'devices.png')

  // 4. Models and Settings.
  await page.click('button[data-page=models]')
  await page.waitForSelector('[data-testid=model-row]', { timeout: 20000 })
  const fits = await page.$$eval('[data-testid=fit]', (e) => e.map((x) => x.textContent))
  check('models listed with fit labels', fits.length > 0 && fits.every((f) => ['fits', 'tight', 'too big', 'unknown'].includes(f)), fits.join(','))
  await shot(page, 'models.png')
  await page.click('button[data-page=settings]')
  await page.waitForSelector('[data-testid=pairing]', { timeout: 10000 })
  check('settings show the device name', (await page.inputValue('#name')).length > 0)
  // The compatible APIs' address, a copy button and a curl example that
  // really answers (run here, in the head's network namespace).
  const base = (await page.textContent('[data-testid=chat-api-base]').catch(() => '')) ?? ''
  check('settings show the chat API base URL', /^http:\/\/127\.0\.0\.1:\d+\/v1$/.test(base), base)
  await context.grantPermissions(['clipboard-read', 'clipboard-write']).catch(() => {})
  await page.click('[data-testid=copy-base]')
  const clip = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => `clipboard unreadable: ${e}`)
  check('Copy puts the base URL on the clipboard', clip === base && (await page.textContent('[data-testid=copy-base]')) === 'Copied', clip)
  const curl = (await page.textContent('[data-testid=curl-example]')) ?? ''
  let curlOut = ''
  try { curlOut = execFileSync('bash', ['-c', curl], { timeout: 60000 }).toString() } catch (e) { curlOut = String(e) }
  let curlReply = ''
  try { curlReply = JSON.parse(curlOut).choices[0].message.content } catch {}
  check('the curl example answers a chat completion', curlReply.length > 0, `${curl} → ${curlOut.slice(0, 200)}`)
  await shot(page, 'settings.png')
  check('no script errors in the page (before the deliberate 400 below)', consoleErrors.length === 0, consoleErrors.join(' | '))
  // Saving goes through the agent's validation: a bad value is refused
  // with a sentence, a good one is kept.
  const dir = await page.inputValue('#dir')
  await page.fill('#dir', '/no/such/folder')
  await page.click('form.card button[type=submit]')
  const bad = await page.waitForSelector('.settings .problem.bad', { timeout: 5000 }).then((e) => e.textContent(), () => '')
  check('bad setting refused with a sentence', bad.includes('does not exist'), bad)
  await page.fill('#dir', dir)
  await page.fill('#ctx', '512')
  check('the ring keep time shows its default', (await page.inputValue('#keep')) === '120')
  await page.fill('#keep', '30')
  // The speculative draft (issue 19): automatic by default, off, or one of
  // the models on disk other than the chat model.
  check('the draft model starts on Automatic', (await page.inputValue('#draft')) === '', await page.inputValue('#draft'))
  const chatModel = (await page.evaluate(() => fetch('api/v1/settings').then((r) => r.json()))).model
  const models = (await page.evaluate(() => fetch('api/v1/models').then((r) => r.json()))).models
  const chat = models.find((m) => m.path === chatModel)
  const drafts = await page.$$eval('#draft option', (o) => o.map((x) => x.value))
  const draft = drafts.find((v) => v.endsWith('.gguf'))
  // Of the chat model's architecture and smaller, when the list has the
  // chat model; else every other model.
  const expect = models.filter((m) => m.path !== chatModel && !m.error && (!chat || (m.arch === chat.arch && m.size < chat.size))).map((m) => m.path).sort()
  check('the draft choices are automatic, off and the models on disk that can be drafts', drafts[0] === '' && drafts[1] === 'off' && !!draft &&
    JSON.stringify(drafts.slice(2).sort()) === JSON.stringify(expect), `${drafts.length} choices for ${expect.length} expected, chat model ${chatModel} ${chat ? 'listed' : 'not listed'}`)
  await page.selectOption('#draft', draft)
  await page.click('form.card button[type=submit]')
  await page.waitForSelector('text=Saved.', { timeout: 5000 }).catch(() => {})
  const st = await page.evaluate(() => fetch('api/v1/settings').then((r) => r.json()))
  check('settings saved', st.context_tokens === 512 && st.ring_keep_seconds === 30 && st.draft === draft, JSON.stringify(st))
  await page.selectOption('#draft', 'off')
  await page.click('form.card button[type=submit]')
  const off = await page.waitForFunction(() => fetch('api/v1/settings').then((r) => r.json()).then((s) => s.draft === 'off'), null, { timeout: 5000 }).then(() => true, () => false)
  check('the draft turned off', off)

} catch (e) {
  check('e2e ran to the end', false, e && e.stack ? e.stack : e)
}
await finish()
