package provider_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/locktui/locktui/internal/redistest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// shared is the redis-server most tests use; each test works in its own namespace (see newEnv).
// Tests that stop their server or need a pristine one start their own with redistest.Start.
var shared *redistest.Server

// leakOptions ignore go-redis's dial-retry goroutine: after a failed dial (tests of a Redis that
// went away) it sleeps up to a second before it notices its closed pool and exits.
var leakOptions = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the tests of a stopped Redis expect those failures.
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(withSharedServer{m}, leakOptions...)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// withSharedServer runs the tests with the shared server up, and stops it before goleak looks
// for leftover goroutines.
type withSharedServer struct{ m *testing.M }

func (w withSharedServer) Run() int {
	tb := &mainTB{}
	defer tb.cleanup()
	shared = redistest.Start(tb)
	return w.m.Run()
}

// mainTB lets TestMain start a redistest server: it implements the few testing.TB methods
// redistest calls. The embedded nil TB only satisfies the interface; calling any other method
// panics, which would be a bug in this file.
type mainTB struct {
	testing.TB
	cleanups []func()
	dirs     []string
}

func (tb *mainTB) Helper() {}

func (tb *mainTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	tb.cleanup()
	os.Exit(1)
}

func (tb *mainTB) Fatalf(format string, args ...any) { tb.Fatal(fmt.Sprintf(format, args...)) }

func (tb *mainTB) Cleanup(f func()) { tb.cleanups = append(tb.cleanups, f) }

func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "provider-test-")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.dirs = append(tb.dirs, dir)
	return dir
}

func (tb *mainTB) cleanup() {
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	tb.cleanups = nil
	for _, dir := range tb.dirs {
		_ = os.RemoveAll(dir)
	}
	tb.dirs = nil
}
