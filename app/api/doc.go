// Package api serves the agent's control API over HTTP on loopback, for the
// CLI, the tray and the window (all through app/api/client).
//
// Every endpoint is under /api/v1 and needs the per-run token written, with
// the address, to api.json in the config directory (0600): "Authorization:
// Bearer TOKEN". Bodies are JSON (app/api/apitype); errors are
// apitype.Error{error: one sentence for a person} with a 4xx/5xx status.
//
//	GET  /api/v1/status          apitype.Status
//	GET  /api/v1/peers           apitype.Peers
//	POST /api/v1/peers/add       AddPeerRequest → Peer   (add by address)
//	POST /api/v1/peers/remove    PeerRequest → {}
//	POST /api/v1/peers/probe     PeerRequest → Probe     (try a link; doctor DEVICE)
//	GET  /api/v1/pair            PairStatus
//	POST /api/v1/pair/show       {} → PairShow           (on the device to trust)
//	POST /api/v1/pair/enter      PairEnterRequest → Peer (on the head)
//	POST /api/v1/unpair          PeerRequest → Peer
//	POST /api/v1/contribute      ContributeRequest → Status
//	GET  /api/v1/doctor          Doctor
//	GET  /api/v1/watch           text/event-stream of Event, one "data: {json}" per event
//
// The web UI (ui.go and the files it names) adds:
//
//	GET  /                       the embedded app (frontend/dist); /?token=T sets the
//	                             token cookie (HttpOnly, SameSite=Strict) and redirects to /
//	GET  /api/v1/settings        Settings (settings.json; the name lives in config.json)
//	POST /api/v1/settings        Settings → Settings (400 with every problem in one sentence each)
//	GET  /api/v1/models          Models: GGUFs in the model folder, Ollama, LM Studio and the
//	                             Hugging Face cache, each with a Halda fit label
//	GET  /api/v1/plan            Plan: the device map (Halda's plan for the selected model)
//	GET  /api/v1/live            text/event-stream of Live ("event: live"): at once, after
//	                             node events (batched 150 ms) and every 2 s (memory, heartbeat)
//	GET  /api/v1/conversations   []ConversationSummary, newest first
//	GET, PUT, DELETE /api/v1/conversations/{id}   Conversation (conversations/ID.json)
//
// Every /api/v1 call also accepts the token cookie instead of the header;
// the app's static files need no token (they hold no secrets).
//
// There is no separate "confirm" step: the code is checked by SPAKE2 on both
// devices (see discovery/identity), so entering it on the head is the
// confirmation, and the device that showed it reports the outcome in
// GET /api/v1/pair.
package api
