// Mirrors app/api/apitype (Go). Field names are the wire.
export interface Problem { code: string; title: string; text: string; fix: string }
export interface Device { id: string; short: string; name: string; app: string }
export interface PairStatus { open: boolean; expires?: string; last?: { peer?: string; name?: string; ok: boolean; error?: string; at: string } }
export interface Status {
  device: Device; contribute: boolean; listening?: string; advertising: boolean
  pairing: PairStatus; problems: Problem[]; config_dir: string
}
export interface Peer {
  id: string; short: string; name: string; contribute: boolean; visible: boolean
  sources: string[]; addrs: string[]; paired: boolean; conflict: boolean
}
export interface Peers { peers: Peer[]; self_copies: Peer[] }
export interface MemSample { at: string; available: number; total: number; pressure: number }
export interface Window { start: number; end: number; gpu: number }
export interface MapDevice {
  id: string; short: string; name: string; self: boolean; paired: boolean; visible: boolean
  contribute: boolean; in_ring: boolean; ring_index: number; role: string; why?: string; case?: string
  windows: Window[]; predicted_ms: number; measured_ms: number | null; rtt_ms: number | null
  profile: string; ram_bytes: number; vram_bytes: number; memory: MemSample[]
}
export interface Plan {
  model: string; model_path: string; layers: number; k: number; predicted_ms: number
  devices: MapDevice[]; problem?: Problem; at: string
}
export interface Live { status: Status; peers: Peers; plan: Plan }
export interface Settings {
  name: string; model_dir: string; model: string; context_tokens: number
  memory_budget: number; expose: boolean; api_key: string
}
export interface Model {
  path: string; name: string; source: string; size: number; arch: string; quant: string
  layers: number; fit: string; why: string; error?: string
}
export interface Models { models: Model[]; selected: string; scanned: string[]; devices: number }
export interface ChatMessage { role: 'user' | 'assistant'; content: string; stats?: Record<string, unknown> }
export interface Conversation {
  id: string; title: string; system: string; model: string; created?: string; updated?: string
  messages: ChatMessage[]
}
export interface ConversationSummary { id: string; title: string; updated: string; messages: number }
