// Package demo runs the console with nothing installed: StartServer brings up a throwaway Redis
// (a local redis-server when there is one, else an in-process miniredis) and Simulate fills it
// with the lock traffic of a small Medusa shop, so every feature of the console has something
// to show: contention, waiters, renewals, stuck locks without TTL, lost leases and churn.
package demo

import (
	"context"
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"

	"github.com/locktui/locktui/internal/redisproc"
)

// Kinds of demo server.
const (
	// KindRedisServer is a redis-server child process.
	KindRedisServer = "redis-server"
	// KindMiniredis is an in-process miniredis.
	KindMiniredis = "miniredis"
)

// startAttempts is how many free ports the demo tries for redis-server before it falls back.
const startAttempts = 3

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
	proc *redisproc.Server

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
		if bin, err := redisproc.LookPath(opts.RedisServer); err == nil {
			proc, err := redisproc.Start(ctx, redisproc.Options{
				Bin:            bin,
				Args:           []string{"--notify-keyspace-events", "KEA"},
				Attempts:       startAttempts,
				KillWithParent: true, // the console may die without closing the server
			})
			if err == nil {
				return &Server{kind: KindRedisServer, addr: proc.Addr(), proc: proc}, nil
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("demo: %w", err)
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
		s.proc.Stop()
	})
	return nil
}
