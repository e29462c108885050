// Command locktui inspects and manages Medusa locks in Redis: an interactive console, and
// list, acquire, release, release-all and run for scripts and cron jobs. Run locktui --help.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/console"
)

func main() {
	// go-redis logs every failed dial on its own; locktui reports errors itself, once per
	// failure, and the console must not have log lines written over it.
	redis.SetLogger(quietLogger{})
	app := &cli.App{
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Getenv:  os.Getenv,
		Version: version(),

		Console:     console.Open,
		Demo:        console.Demo,
		NewObserver: console.NewObserver,
	}
	os.Exit(app.Run(context.Background(), os.Args[1:]))
}

// version is the module version the binary was built from ("(devel)" for a local build).
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Version
	}
	return ""
}

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
