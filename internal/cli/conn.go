package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/sleep"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// connectTimeout is how long a command that does not wait (list, get, acquire without --wait,
// release, release-all, run --timeout 0) tries to reach Redis before it gives up: long enough
// to ride out a failover or a restart, short enough to fail a script quickly. A command that
// waits (run, acquire --wait) rides such an outage out within its own timeout instead.
const connectTimeout = 5 * time.Second

// conn is an open connection to Redis with a provider on it, and an operator.Inspector for the
// commands that read and force-release locks.
type conn struct {
	client     redis.UniversalClient
	p          *provider.Provider
	ops        *operator.Inspector
	closer     func()
	restoreLog func() // puts back where go-redis's log lines went before connect
	warnings   *warnGate
	// reported is the lease whose loss the command reports itself (see reportsLoss).
	reported atomic.Pointer[provider.Lease]
}

// Close stops the warnings, then closes the observer and the client and puts go-redis's log
// lines back where they went. The warnings stop first: a probe of the provider's may still be
// in flight when the client closes under it, and neither what go-redis then logs nor anything
// else may reach the command's stderr after the command returned.
func (c *conn) Close() {
	if c.p != nil {
		c.p.Close()
	}
	if c.warnings != nil {
		c.warnings.shut()
	}
	if c.closer != nil {
		c.closer()
	}
	_ = c.client.Close()
	if c.restoreLog != nil {
		c.restoreLog()
	}
}

// reportsLoss says that the command explains the loss of lease itself, as the error it exits
// with: the provider's warning of that loss is then not printed.
func (c *conn) reportsLoss(lease *provider.Lease) { c.reported.Store(lease) }

// isReportedLoss reports whether a warning with message msg is the provider's report of the loss
// of the lease given to reportsLoss. The provider ends the lease before it logs the loss, so
// Err already holds the loss when the warning arrives.
func (c *conn) isReportedLoss(msg string) bool {
	lease := c.reported.Load()
	if lease == nil {
		return false
	}
	err := lease.Err()
	return err != nil && err.Error() == msg
}

// connect opens the client for a command that does not wait, checks that Redis answers (see
// reach: it retries for up to connectTimeout), and returns a provider that logs its warnings on
// stderr and reports events to App.NewObserver and to observers (as the conn's Inspector does). Once Redis has answered,
// go-redis's own log lines (a failed dial while run holds its lease, …) are warnings on stderr
// too, until the conn is closed; before, they stay wherever they went (the locktui command
// drops them), so a Redis that does not answer is reported by connect alone.
func (s *session) connect(ctx context.Context, o *options, observers ...provider.Observer) (*conn, error) {
	c, _, err := s.open(ctx, o, connectTimeout, "for up to "+connectTimeout.String(), observers)
	return c, err
}

// evictionReadTimeout bounds the read of the server's maxmemory-policy.
const evictionReadTimeout = time.Second

// warnEviction warns, for a command that takes locks, when the server's maxmemory-policy can
// evict them (redisconn.EvictionWarning); a policy that cannot be read says nothing.
func (s *session) warnEviction(ctx context.Context, c *conn) {
	ctx, cancel := context.WithTimeout(ctx, evictionReadTimeout)
	defer cancel()
	if policy, err := redisconn.EvictionPolicy(ctx, c.client); err == nil {
		if warning := redisconn.EvictionWarning(policy); warning != "" {
			s.warnf("%s", warning)
		}
	}
}

// connectWaiting is connect for a command that then waits up to timeout for its keys (flag
// names it: --timeout, --wait): it retries a Redis that cannot be reached within that timeout,
// counted from its first ping, and the provider's wait rides out what comes after. It returns
// the time left of timeout for the wait (at least 1 ms: one attempt), however long reaching
// Redis took.
func (s *session) connectWaiting(ctx context.Context, o *options, flag string, timeout time.Duration, observers ...provider.Observer) (*conn, time.Duration, error) {
	start := time.Now()
	c, _, err := s.open(ctx, o, timeout, fmt.Sprintf("within %s %s", flag, timeout), observers)
	return c, max(time.Until(start.Add(timeout)), time.Millisecond), err
}

// open opens the client, reaches Redis (see reach) and builds the conn. It reports whether
// reaching Redis took retries.
func (s *session) open(ctx context.Context, o *options, window time.Duration, retrying string, observers []provider.Observer) (*conn, bool, error) {
	client, err := redisconn.Open(o.url, o.tls)
	if err != nil {
		return nil, false, err
	}
	retried, err := s.reach(ctx, client, o, window, retrying)
	if err != nil {
		_ = client.Close()
		return nil, false, err
	}
	c := &conn{client: client, warnings: &warnGate{}}
	warnings := slog.New(&warnHandler{w: s.stderr, skip: c.isReportedLoss, gate: c.warnings})
	c.restoreLog = redisconn.LogTo(warnings)
	opts := &provider.Options{Namespace: o.namespace, Logger: warnings, FairQueue: o.fairQueue,
		Holder: provider.Holder{Client: provider.ClientCLI}}
	if s.app.NewObserver != nil {
		var obs provider.Observer
		obs, c.closer = s.app.NewObserver(client, o.namespace)
		observers = append(observers, obs)
	}
	opts.Observer = provider.MultiObserver(observers...)
	c.p = provider.New(client, opts)
	c.ops = operator.New(client, &operator.Options{Namespace: o.namespace, Observer: opts.Observer, Logger: warnings})
	return c, retried, nil
}

// reach pings Redis until it answers, for up to window from its first ping, with the
// provider's backoff (provider.DefaultRetryInterval, ×DefaultBackoffFactor, at most
// DefaultMaximumRetryInterval): a command rides out a failover or a restart this long. The
// first ping may take connectTimeout whatever the window. When a ping fails because Redis
// cannot be reached (provider.IsUnreachable), it writes one line on stderr ("…; retrying " +
// retrying) and tries again; when window passes, the error says how long it tried. Any other
// error (a refused password) ends it at once. It reports whether it retried.
func (s *session) reach(ctx context.Context, client redis.UniversalClient, o *options, window time.Duration, retrying string) (bool, error) {
	where := redisconn.Describe(o.url)
	start := time.Now()
	deadline := start.Add(window)
	pingBy := start.Add(max(window, connectTimeout)) // the first ping's bound
	delay := provider.DefaultRetryInterval
	var last error // the last failure that said why
	for {
		pingCtx, cancel := context.WithDeadline(ctx, pingBy)
		err := client.Ping(pingCtx).Err()
		cancel()
		pingBy = deadline
		switch {
		case err == nil:
			return last != nil, nil
		case ctx.Err() != nil:
			return false, context.Cause(ctx)
		case !time.Now().Before(deadline):
			if last == nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("no answer within %s", time.Since(start).Round(time.Second))
				}
				return false, fmt.Errorf("cannot reach Redis at %s: %w", where, err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				last = err
			}
			return false, fmt.Errorf("cannot reach Redis at %s: %w (tried for %s)", where, last, window)
		case !provider.IsUnreachable(err):
			return false, fmt.Errorf("cannot reach Redis at %s: %w", where, err)
		case last == nil:
			s.errorf("cannot reach Redis at %s: %s; retrying %s", where, oneLine(err.Error()), retrying)
		}
		last = err
		if !sleep.For(ctx, min(delay, time.Until(deadline))) {
			return false, context.Cause(ctx)
		}
		delay = min(time.Duration(float64(delay)*provider.DefaultBackoffFactor), provider.DefaultMaximumRetryInterval)
	}
}

// warnHandler prints the provider's and go-redis's warnings as
// "locktui: warning: message key=value…", until its gate is shut.
type warnHandler struct {
	w     io.Writer
	skip  func(msg string) bool // drops the warnings it reports true for
	gate  *warnGate             // nil: never shut
	attrs []slog.Attr
}

// warnGate ends a warnHandler's writes: once shut returned, no warning is written, also none
// that was being formatted meanwhile. shut waits for a write under way (a stderr that blocks
// holds it up, as it holds up every other write of the command).
type warnGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *warnGate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// write writes s to w unless the gate is shut.
func (g *warnGate) write(w io.Writer, s string) error {
	if g == nil {
		_, err := io.WriteString(w, s)
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	_, err := io.WriteString(w, s)
	return err
}

func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	if h.skip != nil && h.skip(r.Message) {
		return nil
	}
	var b strings.Builder
	b.WriteString("locktui: warning: ")
	b.WriteString(oneLine(r.Message))
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%s", a.Key, oneLine(a.Value.String()))
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	return h.gate.write(h.w, b.String())
}

func (h *warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &warnHandler{w: h.w, skip: h.skip, gate: h.gate, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *warnHandler) WithGroup(string) slog.Handler { return h }

// lockedWriter serialises writes to w, which locktui, the provider's renewal and a child's
// output copier may share. Writers that are files are left alone (see lockWriters).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// lockWriters wraps every writer that is not an *os.File (files are passed to a child as they
// are, so it keeps its terminal) in one shared lock.
func lockWriters(ws ...io.Writer) []io.Writer {
	mu := new(sync.Mutex)
	out := make([]io.Writer, len(ws))
	for i, w := range ws {
		if _, ok := w.(*os.File); ok {
			out[i] = w
		} else {
			out[i] = lockedWriter{mu: mu, w: w}
		}
	}
	return out
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig os.Signal }

// Error names the signal as kill(1) and the shell do ("interrupted by SIGINT"), not by Go's
// description of it ("interrupted by interrupt").
func (e signalError) Error() string {
	switch e.sig {
	case syscall.SIGINT:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	case syscall.SIGHUP:
		return "interrupted by SIGHUP"
	}
	return "interrupted by " + e.sig.String()
}

// exitCode is ExitSignalBase plus the signal's number.
func (e signalError) exitCode() int {
	if n, ok := e.sig.(syscall.Signal); ok {
		return ExitSignalBase + int(n)
	}
	return ExitError
}

// subscribe returns the signals acquire --wait and run react to, and a function that ends the
// subscription.
func (s *session) subscribe() (<-chan os.Signal, func()) {
	if s.app.Signals != nil {
		return s.app.Signals, func() {}
	}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}

// cancelOnSignal returns a context cancelled with a signalError when a signal arrives on sigs,
// and a stop function that ends the watch (the signal, if any, stays the context's cause).
func cancelOnSignal(ctx context.Context, sigs <-chan os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case sig, ok := <-sigs:
			if ok {
				cancel(signalError{sig})
			}
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		<-exited
		cancel(nil)
	}
}

// interrupted returns the signal that cancelled ctx, if one did.
func interrupted(ctx context.Context) (signalError, bool) {
	var se signalError
	ok := errors.As(context.Cause(ctx), &se)
	return se, ok
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(strings.TrimSpace(s))
}

// display shows a key or owner as is when it is plain, quoted when it is empty or holds
// spaces or control characters (operator.Printable, the console's rule too).
func display(s string) string { return operator.Printable(s) }

// quoteKeys renders keys as "a", "b".
func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}
