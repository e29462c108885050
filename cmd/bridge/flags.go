package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/internal/flagspell"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// Defaults of the flags that are not the bridge package's.
const (
	defaultListen          = "127.0.0.1:7420"
	defaultShutdownTimeout = 10 * time.Second
)

// options are the parsed and validated flags.
type options struct {
	listen          string
	redisURL        string
	redisTLS        redisconn.TLSFiles
	namespace       string
	fairQueue       bool
	tokens          []bridge.Token
	insecure        bool
	tlsCert         string
	tlsKey          string
	origins         []string
	limits          bridge.Limits
	maxConns        int
	maxConnsToken   int
	clientTimeout   time.Duration
	resumeWindow    time.Duration
	events          bool
	logFormat       string
	logLevel        slog.Level
	shutdownTimeout time.Duration
}

// errUsage marks an error of the command line (exit status 2).
var errUsage = errors.New("usage")

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// helpWidth is the width the flag descriptions are wrapped to (as locktui's).
const helpWidth = 100

const usageHeader = `bridge serves the locktui lock provider over WebSocket, so that Node processes (the
medusa-locking-bridge package) share Medusa locks with Go services and stock Medusa on one Redis.

Usage: bridge --token TOKEN [flags]

Endpoints:
  /ws        the WebSocket of the bridge protocol (subprotocol locktui-bridge.v3); clients send
             Authorization: Bearer TOKEN
  /healthz   200 while the process is up (no token needed)
  /readyz    200 while Redis answers PING, else 503, also while shutting down (no token needed)
  /metrics   Prometheus metrics in text format (no token needed)

Tokens: --token TOKEN (repeatable), or BRIDGE_TOKEN=TOKEN[,TOKEN…] (preferred: command lines are
visible to other users). TOKEN;owner=PREFIX restricts a token to owners that start with PREFIX
(its leases get such owners too); TOKEN;keys=PREFIX to keys that start with PREFIX (and forbids
release_all); both may be given.
`

const usageFooter = `
Flags take two dashes (--token; the single-dash spelling of earlier versions still works), as
--flag value or --flag=value; a boolean flag is turned off with --events=false. D is a
duration such as 500ms, 4s or 1m.

SIGTERM or SIGINT stops the bridge gracefully: every lease is released and every client gets a
1001 close, within --shutdown-timeout.

Exit status: 0 after a clean stop, 2 for a bad command line, 1 for anything else.
`

// parseFlags parses args; getenv supplies REDIS_URL and BRIDGE_TOKEN. It returns pflag.ErrHelp
// after printing the help on usage for -h and --help, and an error wrapping errUsage for any
// bad flag or value.
func parseFlags(args []string, getenv func(string) string, usage io.Writer) (options, error) {
	var o options
	var tokens, origins []string
	var logLevel string
	fs := pflag.NewFlagSet("bridge", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors are reported in one line by the caller; -h prints below
	redisURL := getenv("REDIS_URL")
	if redisURL == "" {
		redisURL = redisconn.DefaultURL
	}
	fs.StringVar(&o.listen, "listen", defaultListen, "listen on `HOST:PORT`")
	fs.StringVar(&o.redisURL, "redis", redisURL, "Redis `URL` (default $REDIS_URL, else "+redisconn.DefaultURL+")")
	fs.Lookup("redis").DefValue = "" // from $REDIS_URL, which may hold a password: never printed
	fs.StringVar(&o.redisTLS.CA, "redis-tls-ca", "", "CA bundle `FILE` (PEM) for rediss:// URLs")
	fs.StringVar(&o.redisTLS.Cert, "redis-tls-cert", "", "client certificate `FILE` (PEM) for rediss:// URLs")
	fs.StringVar(&o.redisTLS.Key, "redis-tls-key", "", "client key `FILE` (PEM) for rediss:// URLs")
	fs.StringVar(&o.namespace, "namespace", provider.DefaultNamespace, "lock key prefix `NS`")
	fs.BoolVar(&o.fairQueue, "fair-queue", false, "serve waiting requests first come, first served with every provider that has it")
	fs.StringArrayVar(&tokens, "token", nil, "accept the bearer `TOKEN`, optionally TOKEN;owner=PREFIX;keys=PREFIX (repeatable)")
	fs.BoolVar(&o.insecure, "insecure", false, "accept clients that send no token (loopback --listen only; not with restricted tokens)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve TLS (wss://) with the certificate `FILE` (PEM, with --tls-key)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "private key `FILE` (PEM) of --tls-cert")
	fs.StringArrayVar(&origins, "allow-origin", nil, "let browsers from `ORIGIN` connect, e.g. https://admin.example (repeatable)")
	fs.IntVar(&o.limits.MaxFrameBytes, "max-frame-bytes", bridge.DefaultMaxFrameBytes, "largest frame a client may send, `BYTES`")
	fs.IntVar(&o.limits.MaxKeys, "max-keys", bridge.DefaultMaxKeys, "at most `N` keys in one request")
	fs.IntVar(&o.limits.MaxInFlight, "max-in-flight", bridge.DefaultMaxInFlight, "at most `N` requests in flight per connection")
	fs.IntVar(&o.limits.MaxLeases, "max-leases", bridge.DefaultMaxLeases, "at most `N` leases held per connection")
	fs.IntVar(&o.limits.MinLeaseExpire, "min-lease-expire", bridge.DefaultMinLeaseExpire, "shortest lease expire, `SECONDS`; shorter ones are raised to it")
	fs.IntVar(&o.limits.MaxRenewalsPerSecond, "max-renewals-per-second", bridge.DefaultMaxRenewalsPerSecond, "at most `N` key renewals per second of one connection's leases")
	fs.IntVar(&o.maxConns, "max-connections", bridge.DefaultMaxConnections, "at most `N` open connections; beyond it upgrades get 503")
	fs.IntVar(&o.maxConnsToken, "max-connections-per-token", bridge.DefaultMaxConnectionsPerToken, "at most `N` open connections of one token")
	fs.DurationVar(&o.clientTimeout, "client-timeout", bridge.DefaultClientTimeout,
		"end a connection silent for `D`; its leases are freed no earlier (clients ping every quarter of it; at least "+bridge.MinClientTimeout.String()+")")
	fs.DurationVar(&o.resumeWindow, "resume-window", bridge.DefaultResumeWindow, "keep a closed connection's request outcomes for `D` for a reconnecting client")
	fs.BoolVar(&o.events, "events", true, "publish lock events on Redis pub/sub for the console (--events=false: do not)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log `FORMAT`: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "log `LEVEL`: debug, info, warn or error")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "bound the graceful shutdown to `D`; the drain of the connections ends --client-timeout + 1s before it")
	help := fs.BoolP("help", "h", false, "show this help")
	args, _ = flagspell.Normalize(args, fs.Lookup)
	if err := fs.Parse(args); err != nil {
		return o, usageErrorf("%v", err)
	}
	if *help {
		fmt.Fprint(usage, usageHeader+"\nFlags:\n"+fs.FlagUsagesWrapped(helpWidth)+usageFooter)
		return o, pflag.ErrHelp
	}
	if fs.NArg() > 0 {
		return o, usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	envTokens, err := bridge.ParseTokenList(getenv("BRIDGE_TOKEN"))
	if err != nil {
		return o, usageErrorf("BRIDGE_TOKEN: %s", message(err))
	}
	for _, s := range tokens {
		t, err := bridge.ParseToken(s)
		if err != nil {
			return o, usageErrorf("--token: %s", message(err))
		}
		o.tokens = append(o.tokens, t)
	}
	o.tokens = append(o.tokens, envTokens...)
	o.origins = origins
	return o, o.validate(logLevel)
}

// validate checks the values flag parsing cannot.
func (o *options) validate(logLevel string) error {
	if err := bridge.CheckListen(o.listen, o.insecure); err != nil {
		return usageErrorf("%v", err)
	}
	if len(o.tokens) == 0 && !o.insecure {
		return usageErrorf("no token: give --token TOKEN or set BRIDGE_TOKEN (or --insecure on a loopback --listen)")
	}
	if o.insecure {
		for _, t := range o.tokens {
			if t.Restricted() {
				return usageErrorf("%v", bridge.ErrInsecureRestricted)
			}
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usageErrorf("--tls-cert and --tls-key go together")
	}
	if o.namespace == "" {
		return usageErrorf("--namespace must not be empty")
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return usageErrorf("--log-format must be text or json, not %q", o.logFormat)
	}
	if err := o.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return usageErrorf("--log-level must be debug, info, warn or error, not %q", logLevel)
	}
	for name, v := range map[string]int{"--max-frame-bytes": o.limits.MaxFrameBytes, "--max-keys": o.limits.MaxKeys,
		"--max-in-flight": o.limits.MaxInFlight, "--max-leases": o.limits.MaxLeases,
		"--min-lease-expire": o.limits.MinLeaseExpire, "--max-renewals-per-second": o.limits.MaxRenewalsPerSecond,
		"--max-connections": o.maxConns, "--max-connections-per-token": o.maxConnsToken} {
		if v <= 0 {
			return usageErrorf("%s must be positive, not %d", name, v)
		}
	}
	if o.shutdownTimeout <= 0 {
		return usageErrorf("--shutdown-timeout must be positive")
	}
	if o.clientTimeout < bridge.MinClientTimeout {
		return usageErrorf("--client-timeout must be at least %s, not %s", bridge.MinClientTimeout, o.clientTimeout)
	}
	if o.resumeWindow <= 0 {
		return usageErrorf("--resume-window must be positive")
	}
	return nil
}
