// Package client is the typed Go client of the agent's loopback API
// (app/api): the CLI, the tray, the window and app/apptest use it. FromDir
// finds a running agent through api.json in its config directory.
//
// Chat (chat.go) parses the server-sent events of POST /api/v1/chat.
package client
