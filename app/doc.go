// Package app is Homering's composition root: it parses the command line,
// builds the services a subcommand needs and wires them together. It is the
// only place that knows every other package.
//
// Main(args) runs one subcommand (app.go lists them; each lives in its own
// cmd_*.go file): with no arguments the agent with its tray icon, `headless`
// for the agent alone, `ui` for the window, `runner` for the engine child the
// agent starts, and the CLI commands that talk to a running agent through
// app/api/client. Shutdown is cancellation of the context Main derives from
// SIGINT and SIGTERM.
package app
