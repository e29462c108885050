// Package demo runs the console with nothing installed: StartServer brings up a throwaway Redis
// (a local redis-server when there is one, else an in-process miniredis) and Simulate fills it
// with the lock traffic of a small Medusa shop, so every feature of the console has something
// to show: contention, waiters, renewals, stuck locks without TTL, lost leases and churn.
package demo

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Kinds of demo server.
const (
	// KindRedisServer is a redis-server child process.
	KindRedisServer = "redis-server"
	// KindMiniredis is an in-process miniredis.
	KindMiniredis = "miniredis"
)

// startTimeout bounds how long a redis-server gets to answer PING.
const startTimeout = 10 * time.Second

// ServerOptions tune StartServerWith. The zero value prefers redis-server.
type ServerOptions struct {
	// Miniredis forces the in-process miniredis even when redis-server is on PATH.
	Miniredis bool
	// RedisServer is the redis-server binary; default "redis-server" looked up on PATH.
	RedisServer string
}

// Server is a throwaway Redis on a loopback port, stopped by Close.
type Server struct {
	kind    string
	addr    string
	warning string

	mr   *miniredis.Miniredis
	cmd  *exec.Cmd
	dir  string
	done chan struct{} // closed when the redis-server process has exited

	closeOnce sync.Once
}

// StartServer starts a demo server with the default options (see StartServerWith).
func StartServer(ctx context.Context) (*Server, error) { return StartServerWith(ctx, ServerOptions{}) }

// StartServerWith starts a redis-server on a free loopback port when the binary is on PATH
// (without persistence, with keyspace notifications enabled: --notify-keyspace-events KEA),
// otherwise, or when it fails to start (see Warning), an in-process miniredis on 127.0.0.1 whose
// TTLs follow the wall clock. ctx bounds the start-up only; the server runs until Close.
func StartServerWith(ctx context.Context, opts ServerOptions) (*Server, error) {
	var warning string
	if !opts.Miniredis {
		bin := opts.RedisServer
		if bin == "" {
			bin = "redis-server"
		}
		if path, err := exec.LookPath(bin); err == nil {
			srv, err := startRedisServer(ctx, path)
			if err == nil {
				return srv, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			warning = fmt.Sprintf("%v; using the in-process miniredis instead", err)
		}
	}
	mr := miniredis.NewMiniRedis()
	mr.ClockTTL(true) // TTLs run down with the wall clock, as on a real server
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("demo: start miniredis: %w", err)
	}
	return &Server{kind: KindMiniredis, addr: mr.Addr(), mr: mr, warning: warning}, nil
}

// Kind returns KindRedisServer or KindMiniredis.
func (s *Server) Kind() string { return s.kind }

// Addr returns host:port.
func (s *Server) Addr() string { return s.addr }

// URL returns redis://host:port, for redisconn.Open.
func (s *Server) URL() string { return "redis://" + s.addr }

// Warning says why a redis-server found on PATH was not used, or is empty.
func (s *Server) Warning() string { return s.warning }

// Miniredis returns the in-process server, or nil for a redis-server.
func (s *Server) Miniredis() *miniredis.Miniredis { return s.mr }

// Close stops the server and removes its files. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.mr != nil {
			s.mr.Close()
			return
		}
		s.kill()
		_ = os.RemoveAll(s.dir)
	})
	return nil
}

func (s *Server) kill() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// startRedisServer runs bin on a free port, retrying when another process took the port first.
func startRedisServer(ctx context.Context, bin string) (*Server, error) {
	var lastErr error
	for range 3 {
		srv, err := launch(ctx, bin)
		if err == nil || ctx.Err() != nil {
			return srv, err
		}
		lastErr = err
	}
	return nil, lastErr
}

func launch(ctx context.Context, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("demo: find a free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "locktui-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo: temporary directory: %w", err)
	}
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--notify-keyspace-events", "KEA",
		"--loglevel", "warning",
		"--logfile", "", // to stdout, which is discarded: the console owns the terminal
	)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("demo: start %s: %w", bin, err)
	}
	srv := &Server{
		kind: KindRedisServer,
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		cmd:  cmd,
		dir:  dir,
		done: make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(srv.done)
	}()
	if err := srv.awaitReady(ctx); err != nil {
		_ = srv.Close()
		return nil, err
	}
	return srv, nil
}

// awaitReady polls PING until the server answers, exits, or ctx or startTimeout ends. It speaks
// RESP on a raw connection: a go-redis client would log every refused dial to stderr, and the
// console owns the terminal.
func (s *Server) awaitReady(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, startTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ping(ctx, s.addr) {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("demo: redis-server on %s exited during start-up", s.addr)
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return fmt.Errorf("demo: start redis-server: %w", err)
			}
			return fmt.Errorf("demo: redis-server on %s did not answer PING within %s", s.addr, startTimeout)
		case <-tick.C:
		}
	}
}

// ping reports whether a Redis server at addr answers PING with +PONG.
func ping(ctx context.Context, addr string) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(reply, "+PONG")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
