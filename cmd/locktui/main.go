// Command locktui inspects and manages Medusa locks in Redis: an interactive console, and
// list, get, acquire, release, release-all and run for scripts and cron jobs, with shell
// completion (locktui completion bash|zsh|fish|powershell). Run locktui --help.
package main

import (
	"context"
	"os"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/console"
	"github.com/locktui/locktui/redisconn"
)

func main() {
	// go-redis logs every failed dial on its own; locktui reports errors itself, once per
	// failure, and the console must not have log lines written over it. So go-redis's lines
	// are dropped, except while a command is connected: then they are locktui warnings
	// (internal/cli). The console drops them while it owns the terminal (tui.Run).
	redisconn.LogTo(nil)
	app := &cli.App{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,

		Console:     console.Open,
		Demo:        console.Demo,
		NewObserver: console.NewObserver,
	}
	os.Exit(app.Run(context.Background(), os.Args[1:]))
}
