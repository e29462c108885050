package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisInstallHint tells a developer how to get redis-server.
const RedisInstallHint = "redis-server not found on PATH: install it with `apt-get update && apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)"

// RedisServer is a private redis-server started for one benchmark run: loopback only, a free
// port (never 6379), no persistence, its files in a temporary directory removed by Stop.
type RedisServer struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// URL is redis://Addr.
	URL string
	// Dir is the server's working directory (its log), removed by Stop.
	Dir string

	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis launches redis-server and waits until it answers PING. It fails with
// RedisInstallHint when redis-server is not installed.
func StartRedis(ctx context.Context) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New(RedisInstallHint)
	}
	dir, err := os.MkdirTemp("", "locktui-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("bench: temporary directory for redis-server: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		srv, err := launchRedis(ctx, bin, dir)
		if err == nil {
			return srv, nil
		}
		lastErr = err
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("bench: start redis-server: %w", lastErr)
}

func launchRedis(ctx context.Context, bin, dir string) (*RedisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis.log")
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--protected-mode", "yes",
		"--loglevel", "warning",
		"--logfile", logPath,
	)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	srv := &RedisServer{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		cmd:  cmd,
		Dir:  dir,
		done: make(chan struct{}),
	}
	srv.URL = "redis://" + srv.Addr
	go func() {
		_ = cmd.Wait()
		close(srv.done)
	}()
	if err := srv.awaitReady(ctx, 10*time.Second); err != nil {
		srv.kill()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%w (log: %s)", err, strings.TrimSpace(string(log)))
	}
	return srv, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// awaitReady polls PING until the server answers, exits, or limit passes.
func (s *RedisServer) awaitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
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

func (s *RedisServer) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Stop kills the server and removes its directory. It is safe to call more than once.
func (s *RedisServer) Stop() {
	s.kill()
	_ = os.RemoveAll(s.Dir)
}
