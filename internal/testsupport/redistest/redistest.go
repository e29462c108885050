// Package redistest is the Redis test support: a private redis-server for a test (Start,
// StartWith; StartMain for a whole test binary), a Sentinel deployment that a test fails over
// (StartSentinel), a Redis Cluster (StartCluster), a server that never answers (Silent), and a
// go-redis hook that records the commands a client sends and can fail or delay chosen ones
// (Recorder).
//
// The servers run on free loopback ports (internal/redisproc starts them; the benchmark, a
// product, uses that package directly) and stop when the test ends. Tests never touch a server
// the user runs on 6379, and never skip: when redis-server is missing the test fails with a
// message saying how to install it.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/redisproc"
)

// Server is a redis-server process owned by one test.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// URL is redis://Addr, ready for the provider and the CLI.
	URL string

	proc *redisproc.Server
}

// Config tunes the server a test starts; the zero value is a plain server without persistence.
type Config struct {
	// Args are extra redis-server arguments, e.g. "--notify-keyspace-events", "KEA".
	Args []string
}

// Start launches redis-server on a free loopback port and registers its shutdown with
// t.Cleanup. It fails the test (never skips) when redis-server is not installed.
func Start(t testing.TB) *Server { return StartWith(t, Config{}) }

// StartWith is Start with extra server configuration.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	proc, err := redisproc.Start(t.Context(), redisproc.Options{Args: cfg.Args, Dir: t.TempDir()})
	mustStart(t, "start redis-server", err)
	t.Cleanup(proc.Stop)
	return &Server{Addr: proc.Addr(), URL: proc.URL(), proc: proc}
}

// mustStart fails the test when err says what did not start: with how to install redis-server
// when it is missing.
func mustStart(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, redisproc.ErrNotFound) {
		t.Fatal(redisproc.InstallHint)
	}
	if err != nil {
		t.Fatalf("redistest: %s: %v", what, err)
	}
}

// StartMain launches a server for a whole test binary, from TestMain, where no testing.TB
// exists yet: several tests share it, each in a namespace of its own. Call stop after m.Run.
func StartMain() (srv *Server, stop func(), err error) {
	proc, err := redisproc.Start(context.Background(), redisproc.Options{})
	if errors.Is(err, redisproc.ErrNotFound) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("redistest: start redis-server: %w", err)
	}
	return &Server{Addr: proc.Addr(), URL: proc.URL(), proc: proc}, proc.Stop, nil
}

// Client returns a go-redis client for the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server now (for tests of an unreachable Redis); the cleanup is then a no-op.
func (s *Server) Stop() { s.proc.Stop() }

// Pause stops the server process with SIGSTOP: its connections stay open and nothing answers,
// as with a frozen host. Resume continues it.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: pause redis-server: %v", err)
	}
}

// Resume continues a server stopped by Pause.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("redistest: resume redis-server: %v", err)
	}
}

// Restart kills the server (a crash: nothing is saved), keeps it down for down, and starts it
// again on the same address; without persistence it comes back empty, with a new run_id.
func (s *Server) Restart(t testing.TB, down time.Duration) {
	t.Helper()
	if err := s.proc.Restart(t.Context(), down); err != nil {
		t.Fatalf("redistest: restart redis-server: %v", err)
	}
}

// awaitPoll is how often await looks.
const awaitPoll = 20 * time.Millisecond

// await polls cond every awaitPoll until it returns nil, failing the test with its last
// error after limit.
func await(t testing.TB, limit time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	tick := time.NewTicker(awaitPoll)
	defer tick.Stop()
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: waited %s for %s: %v", limit, what, err)
		case <-tick.C:
		}
	}
}
