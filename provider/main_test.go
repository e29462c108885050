package provider_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// shared is the redis-server most tests use; each test works in its own namespace (see newEnv).
// Tests that stop their server or need a pristine one start their own with redistest.Start.
var shared *redistest.Server

// leakOptions are the goroutines that may outlive a test: go-redis's dial-retry goroutine, after
// the tests of a Redis that went away.
var leakOptions = []goleak.Option{testsupport.DialRetry}

func TestMain(m *testing.M) {
	testsupport.Main(m, testsupport.MainOptions{Redis: &shared, FailedDials: true, Leaks: leakOptions})
}
