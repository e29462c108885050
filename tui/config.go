package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
	"github.com/locktui/locktui/tui/source"
)

// Defaults of Config.
const (
	// DefaultRefresh is the poll interval without keyspace notifications.
	DefaultRefresh = time.Second
	// DefaultKeyspacePoll is the poll interval while keyspace notifications keep the table live.
	DefaultKeyspacePoll = 5 * time.Second
	// heartbeatEvery is the PING interval while connected.
	heartbeatEvery = time.Second
	// retryMin and retryMax bound the reconnection backoff.
	retryMin = 500 * time.Millisecond
	retryMax = 30 * time.Second
)

// ErrNoClient is returned by Run without a Redis client.
var ErrNoClient = errors.New("tui: no Redis client")

// EventSource delivers lock events; *events.Subscription is one.
type EventSource interface {
	C() <-chan events.Event
}

// Config configures the console. Only Client is required; the zero value of every other field
// is a working default.
type Config struct {
	// Client is the Redis client (redisconn.Open). The caller keeps ownership and closes it.
	// In read-only mode Run adds a hook to it that refuses every write command.
	Client redis.UniversalClient
	// URL is the server shown in the status bar; its password is redacted again here.
	URL string
	// Namespace is the key prefix of the locks. Default provider.DefaultNamespace.
	Namespace string
	// ReadOnly disables every mutation: d and D are disabled and hidden, an RO badge shows,
	// and the client refuses write commands.
	ReadOnly bool
	// Audit receives a record of every mutation. nil: mutations are not audited, and the
	// confirmation dialog says so.
	Audit audit.Sink
	// Operator is who the audit records name. Default audit.Operator() ("user@host").
	Operator string
	// Refresh is the poll interval. Default DefaultRefresh (1 s). It grows by itself when a
	// refresh of every lock takes longer within the budget.
	Refresh time.Duration
	// KeyspacePoll is the poll interval while keyspace notifications are live. Default
	// DefaultKeyspacePoll (5 s).
	KeyspacePoll time.Duration
	// Budget caps the commands per second of refreshes and keyspace reads. Default
	// source.DefaultBudget (20,000); negative means unlimited.
	Budget int
	// Events delivers lock events (for contention). nil: Run subscribes to the namespace's
	// channel itself (events.Subscribe) unless NoEvents is set.
	Events EventSource
	// NoEvents disables the lock-event subscription.
	NoEvents bool
	// Provider performs the mutations (so its Observer sees them). Default
	// provider.New(Client, &provider.Options{Namespace: Namespace}).
	Provider *provider.Provider
	// NoColor renders without colour; it is also set when the NO_COLOR environment variable
	// is non-empty.
	NoColor bool
	// Stdin and Stdout replace the terminal (tests). Default: the process's terminal.
	Stdin  io.Reader
	Stdout io.Writer
}

func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = provider.DefaultNamespace
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultRefresh
	}
	if c.KeyspacePoll <= 0 {
		c.KeyspacePoll = DefaultKeyspacePoll
	}
	if c.Budget == 0 {
		c.Budget = source.DefaultBudget
	}
	if c.Operator == "" {
		c.Operator = audit.Operator()
	}
	if c.Provider == nil && c.Client != nil {
		c.Provider = provider.New(c.Client, &provider.Options{Namespace: c.Namespace})
	}
	c.URL = redisconn.Describe(c.URL)
	if os.Getenv("NO_COLOR") != "" {
		c.NoColor = true
	}
	return c
}

// Run shows the console until the user quits or ctx ends (which is not an error). It returns
// an error only when the console cannot run: no client, no terminal. While it runs, go-redis'
// global logger is silenced (a failed dial would scribble over the screen; the status bar says
// it instead).
func Run(ctx context.Context, cfg Config) error {
	return run(ctx, cfg)
}

// run is Run with extra program options for tests.
func run(ctx context.Context, cfg Config, opts ...tea.ProgramOption) error {
	if cfg.Client == nil {
		return ErrNoClient
	}
	cfg = cfg.withDefaults()
	if cfg.ReadOnly {
		cfg.Client.AddHook(readOnlyHook{})
	}
	// go-redis logs failed dials to stderr, which would scribble over the screen while Redis
	// is away: the status bar says it instead. The logger is global, so it is put back (as a
	// plain stderr logger) when the console ends.
	redis.SetLogger(discardLogger{})
	defer redis.SetLogger(stderrLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	rt := newRuntime(ctx)
	defer rt.shutdown()
	m := newModel(cfg, rt)
	go m.hub.Run(rt.ctx)
	rt.onClose(func() { <-m.hub.Done() })

	popts := []tea.ProgramOption{tea.WithContext(rt.ctx)}
	if cfg.Stdin != nil {
		popts = append(popts, tea.WithInput(cfg.Stdin))
	}
	if cfg.Stdout != nil {
		popts = append(popts, tea.WithOutput(cfg.Stdout))
	}
	popts = append(popts, opts...)
	_, err := tea.NewProgram(m, popts...).Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // the caller cancelled: a normal end
	}
	if err != nil {
		return fmt.Errorf("tui: %w", err)
	}
	return nil
}

// discardLogger and stderrLogger are go-redis loggers (see Run).
type discardLogger struct{}

// Printf drops the line.
func (discardLogger) Printf(context.Context, string, ...any) {}

type stderrLogger struct{ l *log.Logger }

// Printf writes the line to stderr.
func (s stderrLogger) Printf(_ context.Context, format string, v ...any) {
	_ = s.l.Output(2, fmt.Sprintf(format, v...))
}

// runtime owns the console's background work: the context every command runs in, the count
// of commands in flight, and what must be closed at the end, so Run returns only when nothing
// it started is left running.
type runtime struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	closers []func()
}

func newRuntime(parent context.Context) *runtime {
	ctx, cancel := context.WithCancel(parent)
	return &runtime{ctx: ctx, cancel: cancel}
}

// cmd wraps fn as a tea.Cmd that runs in the runtime's context and is waited for at shutdown;
// after shutdown it does nothing.
func (r *runtime) cmd(fn func(ctx context.Context) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil
		}
		r.wg.Add(1)
		r.mu.Unlock()
		defer r.wg.Done()
		return fn(r.ctx)
	}
}

// after returns a tea.Cmd that delivers msg after d, or nothing when the runtime ends first
// (unlike tea.Tick, whose goroutine would outlive the program).
func (r *runtime) after(d time.Duration, msg tea.Msg) tea.Cmd {
	return r.cmd(func(ctx context.Context) tea.Msg {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			return msg
		}
	})
}

// goroutine runs fn in the background like cmd, for work that is not a tea.Cmd.
func (r *runtime) goroutine(fn func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn(r.ctx)
	}()
}

// onClose registers fn to run at shutdown, after every command ended. If the runtime is
// already shut down, fn runs now.
func (r *runtime) onClose(fn func()) {
	r.mu.Lock()
	if !r.closed {
		r.closers = append(r.closers, fn)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	fn()
}

// shutdown cancels the context, waits for the commands in flight and runs the closers.
func (r *runtime) shutdown() {
	r.cancel()
	r.mu.Lock()
	r.closed = true
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	r.wg.Wait()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}
