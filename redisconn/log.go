package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// logRoute is where LogTo last sent go-redis's log lines; go-redis keeps one logger per
// process, so this is process-wide too.
var logRoute struct {
	mu     sync.Mutex
	routed bool         // LogTo is in effect; false: go-redis's own stderr logger
	to     *slog.Logger // nil: discarded
}

// LogTo sends go-redis's own log lines (failed dials after their retries, connection-pool
// trouble, Sentinel fail-overs: what go-redis prints through redis.SetLogger) to l, as warnings
// whose message starts with "redis: ". A nil l discards them. go-redis has one logger per
// process, so this is process-wide; the returned function puts back what was in place before
// (go-redis's default stderr logger if LogTo had not been called) and may be called more than
// once.
func LogTo(l *slog.Logger) (restore func()) {
	logRoute.mu.Lock()
	defer logRoute.mu.Unlock()
	wasRouted, was := logRoute.routed, logRoute.to
	setRoute(l)
	return sync.OnceFunc(func() {
		logRoute.mu.Lock()
		defer logRoute.mu.Unlock()
		if wasRouted {
			setRoute(was)
			return
		}
		logRoute.routed, logRoute.to = false, nil
		logging.Enable()
	})
}

// setRoute installs l; the caller holds logRoute.mu.
func setRoute(l *slog.Logger) {
	logRoute.routed, logRoute.to = true, l
	redis.SetLogger(slogLogger{l})
}

// slogLogger is go-redis's logger interface (Printf) on a *slog.Logger.
type slogLogger struct{ l *slog.Logger }

// Printf logs one go-redis line as a warning on l.
func (s slogLogger) Printf(ctx context.Context, format string, v ...any) {
	if s.l == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !s.l.Enabled(ctx, slog.LevelWarn) {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	s.l.Log(ctx, slog.LevelWarn, "redis: "+strings.TrimPrefix(msg, "redis: "))
}
