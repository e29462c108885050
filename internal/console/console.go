// Package console wires the command line (internal/cli) to the console (tui), the demo
// (internal/demo) and the lock-event publisher (events): the functions that cmd/locktui installs
// in cli.App's Console, Demo and NewObserver.
//
// It is a seam, not an extra layer: internal/cli holds the commands and their flags and imports
// none of the console's packages (no Bubble Tea, no demo servers), and its tests put fakes in
// the same App fields to check what the command line hands over. This package is the one place
// that imports both sides; it stays out of cmd/locktui so that main only builds the App.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/demo"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
	"github.com/locktui/locktui/tui"
)

// connectTimeout bounds the reachability check before the console opens.
const connectTimeout = 5 * time.Second

// ErrUnreachable is returned when Redis does not answer before the console opens.
var ErrUnreachable = errors.New("cannot reach Redis")

// Open runs the console against the server of cfg until the operator quits. Unless the console
// is read-only, every mutation is audited: to --audit-log, else to audit.DefaultPath(), and to
// --audit-stream when given.
func Open(ctx context.Context, cfg cli.ConsoleConfig) error {
	client, err := cfg.Open()
	if err != nil {
		return err
	}
	defer client.Close()
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		return fmt.Errorf("%w at %s: %v", ErrUnreachable, redisconn.Describe(cfg.URL), err)
	}
	return run(ctx, cfg, client, cfg.URL)
}

// Demo starts an embedded Redis (redis-server when on PATH, else in-process miniredis), runs
// simulated workers against it and opens the console on it.
func Demo(ctx context.Context, cfg cli.ConsoleConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := demo.StartServer(ctx)
	if err != nil {
		return fmt.Errorf("start the demo's Redis: %w", err)
	}
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()

	simDone := make(chan error, 1)
	go func() { simDone <- demo.Simulate(ctx, client, cfg.Namespace, nil) }()
	defer func() {
		cancel()
		<-simDone
	}()
	if cfg.AuditLog == "" {
		// The demo audits to a scratch file so force-releases show the whole flow.
		f, err := os.CreateTemp("", "locktui-demo-audit-*.jsonl")
		if err != nil {
			return fmt.Errorf("create the demo's audit log: %w", err)
		}
		cfg.AuditLog = f.Name()
		f.Close()
		defer fmt.Fprintf(os.Stderr, "locktui demo: audit trail of this session: %s\n", cfg.AuditLog)
	}
	cfg.URL = srv.URL()
	if w := srv.Warning(); w != "" {
		fmt.Fprintf(os.Stderr, "locktui demo: %s\n", w)
	}
	return run(ctx, cfg, client, srv.URL())
}

// run opens the audit sinks and the event publisher and shows the console.
func run(ctx context.Context, cfg cli.ConsoleConfig, client redis.UniversalClient, label string) error {
	tcfg := tui.Config{
		Client:    client,
		URL:       label,
		Namespace: cfg.Namespace,
		ReadOnly:  cfg.ReadOnly,
		Refresh:   cfg.Refresh,
	}
	if !cfg.ReadOnly {
		sink, closeSink, err := cfg.OpenAudit(client)
		if err != nil {
			return err
		}
		defer closeSink()
		tcfg.Audit = sink
		pub := events.NewPublisher(client, cfg.Namespace, events.SourceCLI, nil)
		defer closePublisher(pub)
		tcfg.Inspector = operator.New(client, &operator.Options{
			Namespace: cfg.Namespace,
			Observer:  pub,
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}
	return tui.Run(ctx, tcfg)
}

// NewObserver publishes the lock events of CLI commands (source "cli") so a console watching
// the same namespace sees them; the returned function flushes and stops the publisher.
func NewObserver(client redis.UniversalClient, namespace string) (provider.Observer, func()) {
	pub := events.NewPublisher(client, namespace, events.SourceCLI, nil)
	return pub, func() { closePublisher(pub) }
}

func closePublisher(pub *events.Publisher) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = pub.Close(ctx)
}
