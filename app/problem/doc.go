// Package problem is the one registry of what a person can meet going
// wrong in Homering: each kind of problem has a Code (a stable value the UI,
// the CLI, the tray and API clients see), a title, what to do about it, a
// severity and a Kind that says what sort of failure it is. Services say
// which problem happened and the specifics in one sentence (Error, Make);
// the words every occurrence shares come from the registry, and the HTTP
// layer alone turns a Kind into a status (app/api).
//
// A table test walks every code: a new problem without a title, a fix or a
// valid severity and kind fails it.
package problem
