// Command homering turns the computers of a home into one LLM.
// Everything lives in package app; main only hands over the arguments so that
// `wails build` (which builds the directory holding wails.json) finds it here.
package main

import (
	"os"

	"homering/app"
)

func main() { os.Exit(app.Main(os.Args[1:])) }
