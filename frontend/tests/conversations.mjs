// Conversations never get stuck (issue 18 item 4), checked in the web UI of
// a running `homering headless` (stories260K, a context of 256 tokens) with
// Debian's chromium driven by playwright-core. Run by
// app/apptest/conversations_test.go (inside the node's network namespace) as:
//
//   HOMERING_URL=http://127.0.0.1:PORT HOMERING_TOKEN=... OUT=dir \
//   node frontend/tests/conversations.mjs
//
// It checks, as a person sees them: a reply cut by max tokens is marked;
// the chat's parameters and the answering model are saved with the
// conversation (after a reload); editing a message sends it again and
// replaces what came after; a deleted reply can be asked for again; a long
// conversation is answered with its oldest messages left out and marked,
// and its next turn keeps the same ones out (its prompt's start cached); a
// message longer than the context gets the clear error and goes back to
// the composer, and the next message is answered; with no max tokens a
// reply runs to its end. Checks go to OUT/result.json; screenshots
// cut.png, left-out.png and too-long.png to OUT.
import { start } from './harness.mjs'

const { url, token, check, shot, context, finish } = await start('conversations')

const send = '[data-testid=send]'

try {
  const page = await context.newPage()
  const requests = [] // the bodies of POST api/v1/chat
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith('/api/v1/chat')) requests.push(JSON.parse(r.postData() || '{}'))
  })
  const resp = await page.goto(`${url}/?token=${token}`)
  check('token link opens the app', resp && resp.ok(), resp && resp.status())
  await page.waitForSelector('[data-testid=model-picker] option[value$=".gguf"]', { state: 'attached', timeout: 20000 })

  const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent.trim()))
  const count = async (sel) => (await page.$$(sel)).length
  const api = (method, path, body) => page.evaluate(async ([method, path, body]) => {
    const r = await fetch(path, { method, headers: { 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) })
    return r.json()
  }, [method, path, body])
  // say sends text and waits until the chat is idle again.
  async function say(text) {
    await page.fill('[data-testid=composer]', text)
    await page.click(send)
    await page.waitForSelector('[data-testid=stop]', { state: 'detached', timeout: 120000 })
    await page.waitForSelector(send, { timeout: 120000 })
  }
  const noError = async (what) => {
    const err = await page.$('[data-testid=chat-error]')
    check(`${what}: no error`, !err, err ? await err.textContent() : '')
  }
  const setRange = (sel, v) => page.$eval(sel, (e, v) => {
    e.value = v
    e.dispatchEvent(new Event('input', { bubbles: true }))
    e.dispatchEvent(new Event('change', { bubbles: true }))
  }, v)
  const openParams = async () => {
    if (!(await page.$('[data-testid=params]'))) await page.click('[data-testid=params-toggle]')
  }
  const openChat = async (title) => {
    await page.reload()
    await page.waitForSelector('[data-testid=history] li button.title', { timeout: 15000 })
    await page.click(`[data-testid=history] li button.title[title="${title}"]`)
    await page.waitForSelector('[data-role=assistant]', { timeout: 10000 })
  }

  // 1. Parameters, and a reply cut by max tokens.
  await openParams()
  await setRange('#temp', '0.3')
  await setRange('#topp', '0.9')
  await page.fill('#maxt', '12')
  await say('Once upon a time')
  await noError('first reply')
  const cut = await texts('[data-testid=cut]')
  check('a reply cut by max tokens is marked as cut', cut.length === 1 && cut[0].includes('max tokens'), JSON.stringify(cut))
  check('the reply names the model that answered', (await texts('[data-testid=stats]')).some((s) => s.includes('stories260K')))
  check('requests ask to fit the context, with the chat\'s parameters', requests.length === 1 && requests[0].fit_context === true &&
    requests[0].temperature === 0.3 && requests[0].top_p === 0.9 && requests[0].max_tokens === 12, JSON.stringify(requests[0]))
  await shot(page, 'cut.png')

  // 2. They are saved with the conversation: reload and look.
  const list = await api('GET', 'api/v1/conversations')
  const first = list[0]
  await openChat(first.title)
  await openParams()
  const shown = { temp: await page.inputValue('#temp'), topp: await page.inputValue('#topp'), maxt: await page.inputValue('#maxt') }
  check('after a reload the chat shows its saved parameters', shown.temp === '0.3' && shown.topp === '0.9' && shown.maxt === '12', JSON.stringify(shown))
  check('after a reload the reply still names its model and its cut', (await texts('[data-testid=stats]')).some((s) => s.includes('stories260K')) &&
    (await count('[data-testid=cut]')) === 1)
  const saved = await api('GET', 'api/v1/conversations/' + first.id)
  check('the conversation saves its parameters and the model that answered',
    saved.model === 'stories260K' && saved.params?.temperature === 0.3 && saved.params?.top_p === 0.9 && saved.params?.max_tokens === 12,
    JSON.stringify({ model: saved.model, params: saved.params }))

  // 3. Edit the question: it is sent again and the reply replaced.
  const before = (await texts('[data-role=assistant] .md'))[0]
  await page.click('[data-role=user] [data-testid=edit]')
  await page.fill('[data-testid=edit-text]', 'Tom had a big dog')
  await page.click('[data-testid=edit-save]')
  await page.waitForSelector('[data-testid=stop]', { state: 'detached', timeout: 120000 })
  await page.waitForSelector(send, { timeout: 120000 })
  await noError('edited message')
  const users = await texts('[data-role=user] .bubble')
  const replies = await texts('[data-role=assistant] .md')
  check('an edited message is sent again and what came after is replaced', users.length === 1 && users[0] === 'Tom had a big dog' &&
    replies.length === 1 && replies[0].length > 0 && requests.at(-1).messages.at(-1).content === 'Tom had a big dog',
    JSON.stringify({ users, replies, before }))

  // 4. Delete the reply, then ask for one again.
  await page.click('[data-role=assistant] [data-testid=delete]')
  check('a deleted reply is gone', (await count('[data-role=assistant]')) === 0 && (await count('[data-role=user]')) === 1)
  await page.click('[data-testid=reply]')
  await page.waitForSelector('[data-testid=stop]', { state: 'detached', timeout: 120000 })
  await page.waitForSelector(send, { timeout: 120000 })
  await noError('reply after a delete')
  check('after a delete a new reply is generated from there', (await count('[data-role=assistant]')) === 1 &&
    (await api('GET', 'api/v1/conversations/' + first.id)).messages.length === 2)

  // 5. A conversation longer than the context: its oldest turns are left
  // out of the prompt and marked.
  const messages = []
  for (let i = 1; i <= 10; i++) {
    messages.push({ role: 'user', content: `Once upon a time there was a little cat called Kit number ${i}. She liked to play.` },
      { role: 'assistant', content: 'She played in the park with her friend the dog all day long.' })
  }
  await api('PUT', 'api/v1/conversations/longstory', { title: 'Long story', system: '', model: '', messages,
    params: { temperature: 0.3, top_p: 0.9, max_tokens: 12 } })
  await openChat('Long story')
  await say('What happened next?')
  await noError('a conversation longer than the context')
  const note = await texts('[data-testid=left-out]')
  const m = /no longer sees the (\d+) messages above/.exec(note[0] || '')
  const dimmed = await count('.msg.left-out')
  check('a conversation longer than the context is answered', (await count('[data-role=assistant]')) === 11 &&
    (await texts('[data-role=assistant] .md')).at(-1).length > 0)
  check('the left-out messages are marked', m && Number(m[1]) === dimmed && dimmed >= 2 && dimmed < 21, JSON.stringify({ note, dimmed }))
  const firstKept = await page.$eval('[data-testid=left-out] + .msg', (e) => e.dataset.role).catch(() => '')
  check('a kept turn starts with the user', firstKept === 'user', firstKept)
  await page.$eval('[data-testid=left-out]', (e) => e.scrollIntoView({ block: 'center' }))
  await shot(page, 'left-out.png')
  await openChat('Long story')
  check('the mark stays after a reload', (await count('[data-testid=left-out]')) === 1 && (await count('.msg.left-out')) === dimmed)
  // The next turn keeps the same messages out (while the rest fits), so
  // that the start of the prompt stays cached.
  await say('And then?')
  await noError('the next turn of the long conversation')
  const next = (await api('GET', 'api/v1/conversations/longstory')).messages.at(-1).stats
  check('the next turn sends the last count and keeps the same messages out', requests.at(-1).left_out === dimmed &&
    next?.left_out === dimmed && next?.cached_tokens > 0 && (await count('.msg.left-out')) === dimmed,
    JSON.stringify({ sent: requests.at(-1).left_out, left_out: next?.left_out, cached: next?.cached_tokens, prompt: next?.prompt_tokens }))

  // 6. One message longer than the context: the clear error, the message
  // back in the composer, the conversation as it was, and usable.
  const n = await count('.msg')
  const long = 'The cat sat on the mat and looked at the big red ball. '.repeat(30).trim()
  await say(long)
  const err = await page.$('[data-testid=chat-error]')
  const errText = err ? (await err.textContent()).trim() : ''
  check('a message longer than the context gets one clear sentence', /^The last message is too long for the context \(\d+ tokens; the context holds 256\): shorten it or raise the context length\.$/.test(errText), errText)
  check('the message goes back to the composer', (await page.inputValue('[data-testid=composer]')) === long)
  check('the conversation stays as it was', (await count('.msg')) === n, `${await count('.msg')} messages, ${n} before`)
  await shot(page, 'too-long.png')
  await say('The end.')
  await noError('the next message')
  check('the next message is answered', (await count('.msg')) === n + 2 && (await texts('[data-role=user] .bubble')).at(-1) === 'The end.')

  // 7. With no max tokens a reply runs to its end (bounded by the context).
  await page.click('button.new')
  await openParams()
  await page.fill('#maxt', '')
  await say('Once upon a time')
  await noError('a reply without max tokens')
  const last = requests.at(-1)
  check('no max tokens is sent by default', last.max_tokens === undefined, JSON.stringify(last))
  const newest = (await api('GET', 'api/v1/conversations'))[0]
  const st = (await api('GET', 'api/v1/conversations/' + newest.id)).messages.at(-1).stats
  check('the reply runs to the end of the answer or of the context', st && st.completion_tokens > 12 &&
    (st.stop_reason === 'stop' || st.cut === 'context'), JSON.stringify(st))
  const cuts = await texts('[data-testid=cut]')
  check('it is marked as cut only when the context ended it', st.stop_reason === 'stop' ? cuts.length === 0 : cuts[0]?.includes('context is full'), JSON.stringify(cuts))
} catch (e) {
  check('no exception', false, e && e.stack)
}
await finish()
