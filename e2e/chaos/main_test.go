package chaos_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutine itself; its tests start node.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
