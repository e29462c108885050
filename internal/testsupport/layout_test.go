package testsupport_test

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the import path of the locktui module.
const module = "github.com/locktui/locktui"

// commands are the product's commands: they and every package they import are product code.
var commands = []string{module + "/cmd/locktui", module + "/cmd/bridge", module + "/cmd/bench"}

// No package of the module that a command is built from imports "testing" (test support does,
// so none imports test support either).
func TestNoProductPackageImportsTestSupport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the commands' packages")
	args := append([]string{"list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}, commands...)
	out, err := exec.CommandContext(t.Context(), goBin, args...).Output()
	require.NoError(t, err, "go list: %s", exitStderr(err))
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if !strings.HasPrefix(pkg, module+"/") && pkg != module {
			continue
		}
		if slices.Contains(imports, "testing") || strings.HasPrefix(pkg, module+"/internal/testsupport") {
			t.Errorf("%s is built into a command but imports testing: test support belongs in internal/testsupport, "+
				"and what a command shares with the tests in a package without testing (as internal/redisproc)", pkg)
		}
	}
}

// exitStderr returns what a failed command wrote on stderr.
func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}
