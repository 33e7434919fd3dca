import type { ChatRequest, ChatStats } from './apitype.gen'

// Client of the agent's /api/v1. The page is served by the agent (or proxied
// by the Wails window), so paths are relative and the token travels in an
// HttpOnly cookie that page scripts never see.

export class ApiError extends Error {
  // code is the problem's code (app/problem) when the agent named one, as
  // "context_full"; '' otherwise.
  code: string
  constructor(message: string, code = '') { super(message); this.code = code }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let res: Response
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch {
    throw new ApiError('Homering is not answering. Check that it is running (tray icon), then reload this page.')
  }
  const text = await res.text()
  let data: any = null
  try { data = text ? JSON.parse(text) : null } catch { /* not JSON */ }
  if (!res.ok) {
    if (res.status === 401) throw new ApiError('This page lost its access token. Open the chat again from the tray menu.')
    throw new ApiError(data?.error || `The agent answered ${res.status}. Try again.`)
  }
  return data as T
}

export const get = <T>(path: string) => call<T>('GET', path)
export const post = <T>(path: string, body: unknown = {}) => call<T>('POST', path, body)
export const put = <T>(path: string, body: unknown) => call<T>('PUT', path, body)
export const del = <T>(path: string) => call<T>('DELETE', path)

export interface SSEEvent { event: string; data: string }

// readSSE parses a text/event-stream body, calling onEvent per event.
export async function readSSE(body: ReadableStream<Uint8Array>, onEvent: (e: SSEEvent) => void): Promise<void> {
  const reader = body.getReader()
  const dec = new TextDecoder()
  let buf = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buf += dec.decode(value, { stream: true })
    let i: number
    while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, i)
      buf = buf.slice(i).replace(/^\r?\n\r?\n/, '')
      let event = 'message'
      const data: string[] = []
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      if (data.length) onEvent({ event, data: data.join('\n') })
    }
  }
}

// streamChat posts a chat and reports tokens as they arrive.
export async function streamChat(
  req: ChatRequest,
  signal: AbortSignal,
  on: { token: (t: string) => void; thinking?: (t: string) => void; done: (stats: ChatStats) => void },
): Promise<void> {
  let res: Response
  try {
    res = await fetch('api/v1/chat', {
      method: 'POST', credentials: 'same-origin', signal,
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(req),
    })
  } catch (e) {
    if (signal.aborted) return
    throw new ApiError('Homering is not answering. Check that it is running (tray icon), then try again.')
  }
  if (!res.ok || !res.body) {
    let msg = `The chat failed (${res.status}). Try again.`
    try { msg = (await res.json()).error || msg } catch { /* keep */ }
    if (res.status === 404) msg = 'This Homering has no chat endpoint yet; update it.'
    throw new ApiError(msg)
  }
  let failure = ''
  let code = ''
  try {
    await readSSE(res.body, (e) => {
      const d = JSON.parse(e.data)
      // A token is a piece of the answer or, for a model that reasons
      // apart (Qwen 3, gpt-oss…), of its thinking.
      if (e.event === 'token' && d.thinking) on.thinking?.(d.thinking)
      else if (e.event === 'token') on.token(d.text ?? '')
      else if (e.event === 'done') on.done(d.stats)
      else if (e.event === 'error') { failure = d.error || 'The model stopped with an error.'; code = d.code ?? '' }
    })
  } catch (e) {
    if (!signal.aborted) throw new ApiError('The stream broke off. Try again.')
  }
  if (failure) throw new ApiError(failure, code)
}

export function newID(): string {
  const b = new Uint8Array(9)
  crypto.getRandomValues(b)
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

export function bytes(n: number): string {
  if (n >= 2 ** 30) return (n / 2 ** 30).toFixed(1) + ' GiB'
  if (n >= 2 ** 20) return (n / 2 ** 20).toFixed(1) + ' MiB'
  if (n >= 2 ** 10) return (n / 2 ** 10).toFixed(1) + ' KiB'
  return n + ' B'
}
