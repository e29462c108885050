//go:build unix

package e2e

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the suite, or one helper command when the binary is started as the command of
// `locktui run` (see helperEnv). The suite must leave no goroutine behind.
func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		os.Exit(runHelper(name))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeBinaries()
		os.Exit(code)
	}))
}
