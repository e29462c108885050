package source_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/locktui/locktui/redisconn"
)

func TestMain(m *testing.M) {
	// Drop go-redis' log lines: the tests that stop a server make it log every failed dial.
	redisconn.LogTo(nil)
	goleak.VerifyTestMain(m)
}
