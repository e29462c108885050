// Package redisproc runs a private redis-server child process: loopback only, on a free port
// (never 6379), without persistence, its files in a temporary directory; or several of them as
// a local Redis Cluster (StartCluster). The benchmark (internal/bench) and the demo
// (internal/demo) start their servers with it, and so does the tests' support
// (internal/testsupport/redistest), which wraps it in helpers that take a testing.TB.
package redisproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locktui/locktui/internal/freeport"
	"github.com/locktui/locktui/internal/tailbuf"
)

// InstallHint tells a developer how to get redis-server.
const InstallHint = "redis-server not found on PATH: install it with `apt-get update && apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)"

// ErrNotFound is returned by LookPath and Start when the redis-server binary cannot be found.
// Its message is InstallHint.
var ErrNotFound = errors.New(InstallHint)

// DefaultBin is the binary Start runs when Options.Bin is empty, looked up on PATH.
const DefaultBin = "redis-server"

// Defaults of Options.
const (
	defaultStartTimeout = 10 * time.Second
	defaultAttempts     = 5
	// outputMax bounds the server output kept for error messages (see Server.Output).
	outputMax = 16 << 10
	// waitDelay bounds how long Stop waits for the server's output after it exits (a forked
	// child of redis-server could keep the pipe open).
	waitDelay = 2 * time.Second
)

// Options tune Start. The zero value runs DefaultBin with the default arguments.
type Options struct {
	// Bin is the redis-server binary, a path or a name looked up on PATH; default DefaultBin.
	Bin string
	// Args are extra redis-server arguments after the defaults (--port, --bind 127.0.0.1,
	// --protected-mode yes, --save "", --appendonly no, --dir, --loglevel warning, logging to
	// stdout), e.g. "--notify-keyspace-events", "KEA". A later argument overrides an earlier one.
	Args []string
	// ConfigFile, if set, is a redis.conf that redis-server reads first (its first argument);
	// the arguments override it. A Sentinel (Args "--sentinel") needs one it can rewrite.
	ConfigFile string
	// Dir is the server's working directory, which the caller owns; default a new temporary
	// directory that Stop removes.
	Dir string
	// StartTimeout bounds each attempt's wait for PING; default 10 s.
	StartTimeout time.Duration
	// Attempts is how many ports Start tries before it gives up (another process may take the
	// free port first); default 5.
	Attempts int
	// KillWithParent asks the kernel to kill the server when the process that started it dies
	// without calling Stop (Linux only; elsewhere only Stop ends it).
	KillWithParent bool
}

// Server is a running redis-server. Its methods are safe for concurrent use.
type Server struct {
	addr   string
	port   int
	dir    string
	ownDir bool
	bin    string
	opts   Options
	output *tailbuf.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd     // the current process (Restart starts a new one)
	done chan struct{} // closed when the current process has exited

	stopOnce sync.Once
}

// LookPath resolves bin ("" means DefaultBin) to an executable path. A missing binary gives an
// error matching ErrNotFound.
func LookPath(bin string) (string, error) {
	if bin == "" {
		bin = DefaultBin
	}
	path, err := exec.LookPath(bin)
	switch {
	case err == nil:
		return path, nil
	case bin == DefaultBin:
		return "", ErrNotFound
	default:
		return "", fmt.Errorf("%w (%v)", ErrNotFound, err)
	}
}

// Start launches redis-server on a free loopback port and waits until it answers PING,
// retrying on another port when an attempt fails. ctx bounds the start-up only: the server runs
// until Stop. A missing binary gives an error matching ErrNotFound; an attempt that fails says
// why, with the end of the server's output.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := LookPath(opts.Bin)
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = defaultAttempts
	}
	dir, ownDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "locktui-redis-"); err != nil {
			return nil, fmt.Errorf("temporary directory for redis-server: %w", err)
		}
		ownDir = true
	}
	var lastErr error
	for range opts.Attempts {
		port, err := freeport.Loopback()
		if err != nil {
			return nil, err
		}
		srv := &Server{
			addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			port:   port,
			dir:    dir,
			ownDir: ownDir,
			bin:    bin,
			opts:   opts,
			output: tailbuf.New(outputMax),
		}
		if err = srv.launch(ctx); err == nil {
			return srv, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if ownDir {
		_ = os.RemoveAll(dir)
	}
	return nil, lastErr
}

// launch starts the server process on s.port and waits until it answers PING.
func (s *Server) launch(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--loglevel", "warning",
		"--logfile", "", // to stdout, kept in Output
	}
	if s.opts.ConfigFile != "" {
		args = append([]string{s.opts.ConfigFile}, args...)
	}
	cmd := exec.Command(s.bin, append(args, s.opts.Args...)...)
	cmd.Stdout, cmd.Stderr = s.output, s.output
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = sysProcAttr(s.opts.KillWithParent)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.awaitReady(ctx, s.opts.StartTimeout); err != nil {
		s.kill()
		if out := s.output.LastLines(5, " | "); out != "" {
			err = fmt.Errorf("%w (output: %s)", err, out)
		}
		return err
	}
	return nil
}

// awaitReady polls PING until the server answers, exits, or ctx or limit ends.
func (s *Server) awaitReady(parent context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ping(ctx, s.addr) {
			return nil
		}
		select {
		case <-s.Done():
			return fmt.Errorf("redis-server on %s exited during start-up", s.addr)
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return fmt.Errorf("start redis-server: %w", err)
			}
			return fmt.Errorf("redis-server on %s did not answer PING within %s", s.addr, limit)
		case <-tick.C:
		}
	}
}

// ping reports whether a Redis server at addr is up: it answers PING with +PONG, or with
// -NOAUTH when it requires a password. It speaks RESP on a raw connection, so nothing is logged
// (a go-redis client logs refused dials, and the console owns the terminal).
func ping(ctx context.Context, addr string) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	deadline := time.Now().Add(time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && (strings.HasPrefix(reply, "+PONG") || strings.HasPrefix(reply, "-NOAUTH"))
}

// Addr returns 127.0.0.1:port.
func (s *Server) Addr() string { return s.addr }

// URL returns redis://127.0.0.1:port, for redisconn.Open and the provider.
func (s *Server) URL() string { return "redis://" + s.addr }

// Dir returns the server's working directory.
func (s *Server) Dir() string { return s.dir }

// Done is closed when the server process has exited, after Stop or on its own.
func (s *Server) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Output returns the end of what the server wrote to stdout and stderr (its log).
func (s *Server) Output() string { return s.output.String() }

// Stop kills the server, waits until it has exited and removes the working directory Start
// created (not one given in Options.Dir). It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.kill()
		if s.ownDir {
			_ = os.RemoveAll(s.dir)
		}
	})
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	select {
	case <-done:
	default:
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart kills the server (SIGKILL: like a crash, nothing is saved) and, after down, starts it
// again on the same port with the same arguments; without persistence it comes back empty, with
// a new run_id. ctx bounds the wait and the start-up.
func (s *Server) Restart(ctx context.Context, down time.Duration) error {
	s.kill()
	t := time.NewTimer(down)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("restart redis-server: %w", ctx.Err())
	case <-t.C:
	}
	return s.launch(ctx)
}

// Signal sends sig to the server process, e.g. SIGSTOP and SIGCONT to stall it the way a frozen
// host or a hung network does, without closing its connections.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Signal(sig)
}
