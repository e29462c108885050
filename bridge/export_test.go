package bridge

import (
	"testing"

	"github.com/locktui/locktui/provider"
)

// HoldGrants makes every lease grant wait for hold(lease) before it is queued, until the test
// ends: a lease can then be lost before its grant is written.
func HoldGrants(t *testing.T, hold func(*provider.Lease)) {
	grantHook = hold
	t.Cleanup(func() { grantHook = nil })
}
