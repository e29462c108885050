package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/locktui/locktui/internal/redisproc"
)

// RedisServer is a private redis-server started for one benchmark run: loopback only, a free
// port (never 6379), no persistence, its files in a temporary directory removed by Stop.
type RedisServer struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// URL is redis://Addr.
	URL string
	// Dir is the server's working directory, removed by Stop.
	Dir string

	proc *redisproc.Server
}

// StartRedis launches redis-server and waits until it answers PING. When redis-server is not
// installed its error matches redisproc.ErrNotFound, whose message says how to install it.
func StartRedis(ctx context.Context) (*RedisServer, error) {
	proc, err := redisproc.Start(ctx, redisproc.Options{})
	if errors.Is(err, redisproc.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("bench: start redis-server: %w", err)
	}
	return &RedisServer{Addr: proc.Addr(), URL: proc.URL(), Dir: proc.Dir(), proc: proc}, nil
}

// Stop kills the server and removes its directory. It is safe to call more than once.
func (s *RedisServer) Stop() { s.proc.Stop() }
