package operator_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// shared is the redis-server the tests use; each test works in its own namespace (see newEnv).
var shared *redistest.Server

// The test of a stopped Redis makes go-redis fail its dials.
func TestMain(m *testing.M) {
	testsupport.Main(m, testsupport.MainOptions{Redis: &shared, FailedDials: true, Leaks: []goleak.Option{testsupport.DialRetry}})
}
