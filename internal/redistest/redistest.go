// Package redistest starts a private redis-server for a test on a free loopback port and stops it
// when the test ends. Tests never touch a server the user runs on 6379, and never skip: when
// redis-server is missing the test fails with a message saying how to install it.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// InstallHint tells a developer how to get redis-server on Debian or Ubuntu.
const InstallHint = "redis-server not found on PATH: install it with `apt-get update && apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)"

// Server is a redis-server process owned by one test.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// URL is redis://Addr, ready for the provider and the CLI.
	URL string

	cmd  *exec.Cmd
	done chan struct{}
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
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(InstallHint)
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: find a free port: %v", err)
		}
		srv, err := launch(bin, dir, port, cfg.Args)
		if err == nil {
			t.Cleanup(srv.stop)
			return srv
		}
		lastErr = err
	}
	t.Fatalf("redistest: start redis-server: %v", lastErr)
	return nil
}

// Client returns a go-redis client for the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server now (for tests of an unreachable Redis); the cleanup is then a no-op.
func (s *Server) Stop() { s.stop() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func launch(bin, dir string, port int, extra []string) (*Server, error) {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--protected-mode", "yes",
		"--loglevel", "warning",
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	logPath := filepath.Join(dir, fmt.Sprintf("redis-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	srv := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		cmd:  cmd,
		done: make(chan struct{}),
	}
	srv.URL = "redis://" + srv.Addr
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(srv.done)
	}()
	if err := srv.awaitReady(10 * time.Second); err != nil {
		srv.stop()
		return nil, fmt.Errorf("%w (log: %s)", err, tail(logPath))
	}
	return srv, nil
}

// awaitReady polls PING until the server answers, it exits, or the deadline passes.
func (s *Server) awaitReady(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server on %s exited during start-up", s.Addr)
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s did not answer PING within %s", s.Addr, limit)
		case <-tick.C:
		}
	}
}

func (s *Server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 5 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, " | ")
}
