package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
)

// MainOptions is what a test binary sets up around its tests; the zero value sets up nothing
// and only checks for leaked goroutines.
type MainOptions struct {
	// Redis, when not nil, gets a redis-server that the package's tests share (each in a
	// namespace of its own), started before the tests and stopped before the leak check.
	Redis **redistest.Server
	// Build, when not "", is a package that go build builds before the tests (".": the package
	// under test's directory), into a scratch directory removed after them; the binary, named
	// after the package's directory, goes to *Binary.
	Build  string
	Binary *string
	// StateHome, when set, points XDG_STATE_HOME at a scratch directory for the tests, so what a
	// command keeps there by default (the audit trail) never lands in the developer's home.
	StateHome bool
	// FailedDials is for tests of a Redis that went away: go-redis's log of every failed dial
	// is dropped.
	FailedDials bool
	// Leaks are goleak options for goroutines that may outlive the tests (DialRetry).
	Leaks []goleak.Option
}

// DialRetry ignores go-redis's dial-retry goroutine: after a failed dial it sleeps up to a
// second before it notices its closed pool and exits.
var DialRetry = goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")

// Main runs a test binary's tests from its TestMain with what opts sets up, then, when they
// passed, checks that none of them left a goroutine running; it exits with the outcome. What
// cannot be set up fails the binary with a message on stderr (never a skip).
func Main(m *testing.M, opts MainOptions) {
	code := run(m, opts)
	if code == 0 {
		if err := goleak.Find(opts.Leaks...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// run sets up what opts asks for, runs the tests and undoes the set-up, before the leak check.
func run(m *testing.M, opts MainOptions) int {
	if opts.FailedDials {
		redisconn.LogTo(nil)
	}
	if opts.StateHome || opts.Build != "" {
		dir, err := os.MkdirTemp("", "locktui-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if opts.StateHome {
			if err := os.Setenv("XDG_STATE_HOME", dir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		if opts.Build != "" {
			bin, err := build(opts.Build, dir)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			*opts.Binary = bin
		}
	}
	if opts.Redis != nil {
		srv, stop, err := redistest.StartMain()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		*opts.Redis = srv
	}
	return m.Run()
}

// build builds pkg into dir and returns the binary's path.
func build(pkg, dir string) (string, error) {
	name := filepath.Base(pkg)
	if pkg == "." {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		name = filepath.Base(wd)
	}
	bin := filepath.Join(dir, "bin", name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}
