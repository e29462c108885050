package bridge

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/provider"
)

// Default limits, announced to every client in the welcome message.
const (
	DefaultMaxFrameBytes = 64 << 10
	DefaultMaxKeys       = 256
	DefaultMaxInFlight   = 256
	DefaultMaxLeases     = 1024
	// DefaultMaxBadFrames is how many invalid frames a connection may send in a burst before it
	// is closed with 1008; the budget refills at one frame per badFrameRefill.
	DefaultMaxBadFrames = 10
)

// Default heartbeats: the bridge pings every DefaultPingPeriod and drops a connection that has
// sent nothing (pong or frame) for DefaultPongWait.
const (
	DefaultPingPeriod = 20 * time.Second
	DefaultPongWait   = 30 * time.Second
)

// Errors of configuration and start-up.
var (
	// ErrNoToken: the bridge has no token and was not started insecure.
	ErrNoToken = errors.New("bridge: no token configured: give --token or BRIDGE_TOKEN, or --insecure on a loopback address")
	// ErrInsecureNotLoopback: --insecure was asked for on an address other machines reach.
	ErrInsecureNotLoopback = errors.New("bridge: --insecure is only allowed on a loopback address (127.0.0.1, ::1 or localhost)")
	// ErrInsecureRestricted: insecure mode was asked for with owner-restricted tokens, whose
	// restriction any client could escape by sending no token at all.
	ErrInsecureRestricted = errors.New("bridge: --insecure cannot be combined with owner-restricted tokens (TOKEN:PREFIX): a client without a token could use any owner; drop --insecure or the prefixes")
	// ErrBadToken: a token (or its owner prefix) cannot be used.
	ErrBadToken = errors.New("bridge: bad token")
	// ErrNoClient: Config.Client is nil.
	ErrNoClient = errors.New("bridge: no Redis client")
)

// Token is one accepted bearer token, optionally restricted to owners that start with
// OwnerPrefix.
type Token struct {
	// Secret is the bearer token itself.
	Secret string
	// OwnerPrefix, when set, is the prefix every owner of acquire, release and release_all must
	// have. Leases stay allowed: their owner is a fresh "execute:<uuid>" only this connection
	// knows.
	OwnerPrefix string
}

// ParseToken parses "SECRET" or "SECRET:OWNER-PREFIX". The secret may not contain ':' ','
// or white space; the prefix (everything after the first ':') may contain ':' but not ','.
func ParseToken(s string) (Token, error) {
	secret, prefix, restricted := strings.Cut(s, ":")
	if restricted && prefix == "" && secret != "" {
		return Token{}, fmt.Errorf("%w: empty owner prefix after ':' (write TOKEN or TOKEN:owner-prefix)", ErrBadToken)
	}
	t := Token{Secret: secret, OwnerPrefix: prefix}
	return t, t.validate()
}

// validate checks a token however it was made.
func (t Token) validate() error {
	switch {
	case t.Secret == "":
		return fmt.Errorf("%w: empty token", ErrBadToken)
	case strings.ContainsAny(t.Secret, ":, \t\r\n"):
		return fmt.Errorf("%w: a token may not contain ':', ',' or white space", ErrBadToken)
	case strings.ContainsAny(t.OwnerPrefix, ",\r\n"):
		return fmt.Errorf("%w: an owner prefix may not contain ',' or line breaks", ErrBadToken)
	}
	return nil
}

// ParseTokenList parses a comma-separated list of tokens, as BRIDGE_TOKEN holds them. Empty
// items (a trailing comma) are skipped.
func ParseTokenList(s string) ([]Token, error) {
	var out []Token
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		t, err := ParseToken(item)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// CheckListen refuses insecure mode on an address that is not loopback. An empty host (all
// interfaces) is not loopback; "localhost" is.
func CheckListen(addr string, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bridge: bad listen address %q: %v (want host:port)", addr, err)
	}
	if insecure && !isLoopbackHost(host) {
		return ErrInsecureNotLoopback
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Config configures a Server. Only Client and (unless Insecure) Tokens are required; every
// other zero field takes its default.
type Config struct {
	// Client is the Redis client the provider uses; the caller closes it after Shutdown.
	Client redis.UniversalClient
	// Namespace is the lock key prefix; default provider.DefaultNamespace ("medusa_lock:").
	Namespace string
	// Tokens are the accepted bearer tokens.
	Tokens []Token
	// Insecure accepts connections without an Authorization header, unrestricted; a request
	// that sends a token must still send a valid one. Serve refuses it unless the listener is on
	// a loopback address, and New refuses it with owner-restricted tokens
	// (ErrInsecureRestricted).
	Insecure bool
	// AllowOrigins lists the browser origins (scheme://host[:port]) allowed to connect. Requests
	// without an Origin header (non-browser clients) are always allowed.
	AllowOrigins []string
	// TLS, when set, makes Serve speak HTTPS/WSS.
	TLS *tls.Config
	// Limits are per connection; zero fields take the Default* values.
	Limits Limits
	// MaxBadFrames is the burst of invalid frames tolerated before a 1008 close; default
	// DefaultMaxBadFrames.
	MaxBadFrames int
	// PingPeriod and PongWait tune the heartbeats; defaults DefaultPingPeriod and
	// DefaultPongWait. PingPeriod must be shorter than PongWait.
	PingPeriod, PongWait time.Duration
	// Observer, when set, also receives every lock event of the bridge's provider (for example
	// an events.Publisher). It must not block.
	Observer provider.Observer
	// Logger receives connection and error logs; default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = provider.DefaultNamespace
	}
	if c.Limits.MaxFrameBytes <= 0 {
		c.Limits.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.Limits.MaxKeys <= 0 {
		c.Limits.MaxKeys = DefaultMaxKeys
	}
	if c.Limits.MaxInFlight <= 0 {
		c.Limits.MaxInFlight = DefaultMaxInFlight
	}
	if c.Limits.MaxLeases <= 0 {
		c.Limits.MaxLeases = DefaultMaxLeases
	}
	if c.MaxBadFrames <= 0 {
		c.MaxBadFrames = DefaultMaxBadFrames
	}
	if c.PongWait <= 0 {
		c.PongWait = DefaultPongWait
	}
	if c.PingPeriod <= 0 || c.PingPeriod >= c.PongWait {
		c.PingPeriod = min(DefaultPingPeriod, c.PongWait*2/3)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
