// Command bridge serves the locktui lock provider over WebSocket, so that Node processes (the
// medusa-locking-bridge package) share locks with Go services and stock Medusa on one Redis.
//
//	bridge --listen 127.0.0.1:7420 --redis redis://localhost:6379 --token "$TOKEN"
//
// Endpoints: /ws (WebSocket, protocol in docs/bridge-protocol.md), /healthz, /readyz and
// /metrics. Flags are GNU style (--token; the single-dash spelling of Go's flag package still
// works); bridge --help lists them. SIGTERM or SIGINT stops it gracefully: every lease is released and every client gets
// a 1001 close. Exit status: 0 after a clean stop, 2 for a bad command line, 1 for anything else.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/redisconn"
)

// startupPingTimeout bounds the Redis check at start-up (a failure is only logged: /readyz
// reports it until Redis answers).
const startupPingTimeout = 3 * time.Second

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, stop, os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run is the whole command; it returns the exit status. stopSignals restores the default
// signal handling once ctx is done, so a second signal kills a stuck shutdown.
func run(ctx context.Context, stopSignals func(), args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "bridge: %s (see bridge --help)\n", message(err))
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "bridge: %s\n", message(err))
		return exitError
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.logLevel})
	if opts.logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: opts.logLevel})
	}
	log := slog.New(handler)
	// go-redis's own lines (failed dials, pool trouble) go to the same log, as warnings.
	restoreRedisLog := redisconn.LogTo(log)
	defer restoreRedisLog()

	client, err := redisconn.Open(opts.redisURL, opts.redisTLS)
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	var tlsConf *tls.Config
	if opts.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(opts.tlsCert, opts.tlsKey)
		if err != nil {
			return fail(fmt.Errorf("load --tls-cert/--tls-key: %w", err))
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	cfg := bridge.Config{
		Client: client, Namespace: opts.namespace, FairQueue: opts.fairQueue, Tokens: opts.tokens, Insecure: opts.insecure,
		AllowOrigins: opts.origins, TLS: tlsConf, Limits: opts.limits, Logger: log,
		MaxConnections: opts.maxConns, MaxConnectionsPerToken: opts.maxConnsToken,
		ClientTimeout: opts.clientTimeout, ResumeWindow: opts.resumeWindow,
	}
	var pub *events.Publisher
	if opts.events {
		pub = events.NewPublisher(client, opts.namespace, events.SourceBridge, &events.PublisherOptions{Logger: log})
		cfg.Observer = pub
	}
	closeEvents := func(ctx context.Context) {
		if pub != nil {
			if err := pub.Close(ctx); err != nil {
				log.Warn("lock events were lost on shutdown", "error", err)
			}
		}
	}
	srv, err := bridge.New(cfg)
	if err != nil {
		closeEvents(context.Background())
		return fail(err)
	}
	l, err := net.Listen("tcp", opts.listen)
	if err != nil {
		closeEvents(context.Background())
		return fail(fmt.Errorf("listen on %s: %w", opts.listen, err))
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	log.Info("listening", "addr", l.Addr().String(), "tls", tlsConf != nil, "insecure", opts.insecure,
		"tokens", len(opts.tokens), "redis", redisconn.Describe(opts.redisURL), "namespace", opts.namespace,
		"events", opts.events)
	if tlsConf == nil && !opts.insecure && bridge.CheckListen(opts.listen, true) != nil {
		log.Warn("serving without TLS on an address other machines reach: tokens travel in clear text; use --tls-cert/--tls-key or a TLS proxy")
	}
	pingCtx, cancelPing := context.WithTimeout(ctx, startupPingTimeout)
	if err := client.Ping(pingCtx).Err(); err != nil && ctx.Err() == nil {
		log.Warn("Redis does not answer yet; /readyz reports 503 until it does", "error", err)
	} else if policy, err := redisconn.EvictionPolicy(pingCtx, client); err == nil && redisconn.EvictionWarning(policy) != "" {
		log.Warn(redisconn.EvictionWarning(policy), "maxmemory_policy", policy)
	}
	cancelPing()

	select {
	case <-ctx.Done():
		stopSignals()
		log.Info("shutting down: draining connections (going_away), then closing them")
	case err := <-served:
		closeEvents(context.Background())
		return fail(err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), opts.shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if serveErr := <-served; serveErr != nil {
		err = errors.Join(err, serveErr)
	}
	closeEvents(shutdownCtx)
	if err != nil {
		log.Error("shutdown was not clean", "error", err)
		return exitError
	}
	log.Info("stopped")
	return exitOK
}

// message is err's text for the one-line report "bridge: <message>": without the errUsage
// marker and without a package prefix that would repeat "bridge:".
func message(err error) string {
	msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
	return strings.TrimPrefix(msg, "bridge: ")
}
