package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// Defaults of Config.
const (
	// DefaultRefresh is the poll interval without keyspace notifications.
	DefaultRefresh = time.Second
	// DefaultKeyspacePoll is the shortest interval between two full refreshes while keyspace
	// notifications keep the table live: they only repair drift (docs/console-cost.md says
	// why 5 minutes).
	DefaultKeyspacePoll = 5 * time.Minute
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
	// In read-only mode Run guards it with redisconn.GuardReadOnly (on a Cluster, also every
	// node's client), whose hook refuses every write command and stays after Run returns.
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
	// refresh (a walk of the whole database) takes longer within the budget.
	Refresh time.Duration
	// KeyspacePoll is the shortest interval between two full refreshes while keyspace
	// notifications are live; a large database stretches it (source.DriftInterval). Default
	// DefaultKeyspacePoll (5 min).
	KeyspacePoll time.Duration
	// Budget caps the cost per second of refreshes and targeted reads (docs/console-cost.md).
	// Default budget.Default (20,000); negative means unlimited.
	Budget int
	// Events delivers lock events (for contention). nil: Run subscribes to the namespace's
	// channel itself (events.Subscribe) unless NoEvents is set.
	Events EventSource
	// NoEvents disables the lock-event subscription.
	NoEvents bool
	// Inspector performs the mutations (so its Observer sees them) and the reads that follow
	// them. Default operator.New(Client, &operator.Options{Namespace: Namespace}).
	Inspector *operator.Inspector
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
		c.Budget = budget.Default
	}
	if c.Operator == "" {
		c.Operator = audit.Operator()
	}
	if c.Inspector == nil && c.Client != nil {
		c.Inspector = operator.New(c.Client, &operator.Options{Namespace: c.Namespace})
	}
	c.URL = redisconn.Describe(c.URL)
	if os.Getenv("NO_COLOR") != "" {
		c.NoColor = true
	}
	return c
}

// Run shows the console until the user quits or ctx ends (which is not an error). It returns
// an error only when the console cannot run: no client, no terminal. While it runs, go-redis'
// global logger is silenced (redisconn.LogTo(nil)) and then put back as it was (a failed dial
// would scribble over the screen; the status bar says it instead). Run returns once its
// background work ended, except reads still waiting for a stalled Redis after a grace of about
// a second: those end at their own deadlines, unseen. A release under way when the user quits,
// and its audit record, are always waited for.
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
		redisconn.GuardReadOnly(ctx, cfg.Client)
	}
	// go-redis logs failed dials to stderr, which would scribble over the screen while Redis
	// is away: the status bar says it instead. The logger is global, so it is put back when
	// the console ends.
	restoreRedisLog := redisconn.LogTo(nil)
	defer restoreRedisLog()
	rt := newRuntime(ctx)
	defer rt.shutdown()
	m := newModel(cfg, rt)

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
