import type { Live } from './apitype.gen'

// One shared subscription to GET /api/v1/live: the agent pushes a snapshot
// when something changes and a heartbeat every few seconds; EventSource
// reconnects by itself after a drop.
// at is when the last snapshot arrived (performance.now()), so elapsed times
// in it can keep counting between snapshots.
export const live = $state<{ data: Live | null; at: number; connected: boolean; lost: boolean }>({ data: null, at: 0, connected: false, lost: false })

let source: EventSource | null = null

export function connectLive() {
  if (source) return
  source = new EventSource('api/v1/live', { withCredentials: true })
  source.addEventListener('live', (e) => {
    live.data = JSON.parse((e as MessageEvent).data)
    live.at = performance.now()
    live.connected = true
    live.lost = false
  })
  source.onerror = () => {
    live.connected = false
    live.lost = true
  }
}
