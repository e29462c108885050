package operator_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
)

// shared is the redis-server the tests use; each test works in its own namespace (see newEnv).
var shared *redistest.Server

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the test of a stopped Redis expects those failures.
	redisconn.LogTo(nil)
	goleak.VerifyTestMain(withSharedServer{m},
		// go-redis's dial-retry goroutine outlives a failed dial by up to a second.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
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
