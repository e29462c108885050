//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/locktui/locktui/internal/nodeproc"
	"github.com/locktui/locktui/internal/testsupport/stocknode"
)

// bins are the binaries under test, built once per test run.
type bins struct {
	// bridge is cmd/bridge.
	bridge string
	// locktui is cmd/locktui.
	locktui string
}

var (
	buildOnce sync.Once
	buildDir  string
	built     bins
	buildErr  error
)

// binaries builds cmd/bridge and cmd/locktui into a temporary directory on first use and
// returns their paths; a failed build fails every test that needs them.
func binaries(t *testing.T) bins {
	t.Helper()
	buildOnce.Do(func() { built, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("e2e: %v", buildErr)
	}
	return built
}

func build() (bins, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return bins{}, fmt.Errorf("go not found on PATH, needed to build the bridge and locktui: install Go (https://go.dev/dl/)")
	}
	root, err := moduleRoot()
	if err != nil {
		return bins{}, err
	}
	buildDir, err = os.MkdirTemp("", "locktui-e2e-")
	if err != nil {
		return bins{}, fmt.Errorf("create the build directory: %w", err)
	}
	cmd := exec.Command(goBin, "build", "-o", buildDir+string(filepath.Separator), "./cmd/bridge", "./cmd/locktui")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return bins{}, fmt.Errorf("go build ./cmd/bridge ./cmd/locktui: %v\n%s", err, out)
	}
	return bins{bridge: filepath.Join(buildDir, "bridge"), locktui: filepath.Join(buildDir, "locktui")}, nil
}

// removeBinaries deletes what binaries built; TestMain calls it after the suite.
func removeBinaries() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// moduleRoot is the directory of the locktui go.mod (the parent of compat/).
func moduleRoot() (string, error) {
	compat, err := nodeproc.FindCompatDir(".")
	if err != nil {
		return "", err
	}
	return filepath.Dir(compat), nil
}

// nodeEnv checks that node and the npm packages the workers load are installed and returns
// the node binary and the compat directory. It fails the test (never skips) with a hint.
func nodeEnv(t *testing.T) (node, compat string) {
	t.Helper()
	node, err := nodeproc.LookPath()
	if err != nil {
		t.Fatal(err)
	}
	compat, err = stocknode.CompatDir()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	// The stock packages, and ws: the bridge client's dependency.
	if err := nodeproc.CheckDeps(compat, slices.Concat(stocknode.Packages, []string{"ws"})...); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	return node, compat
}
