package provider_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
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
	redisconn.LogTo(nil)
	goleak.VerifyTestMain(withSharedServer{m}, leakOptions...)
}

// withSharedServer runs the tests with the shared server up, and stops it before goleak looks
// for leftover goroutines.
type withSharedServer struct{ m *testing.M }

func (w withSharedServer) Run() int {
	srv, stop, err := redistest.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	shared = srv
	return w.m.Run()
}
