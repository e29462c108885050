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
	// DefaultMinLeaseExpire is the shortest lease in seconds; a lease asked for less gets it.
	DefaultMinLeaseExpire = 2
	// DefaultMaxRenewalsPerSecond caps the key renewals per second of one connection's leases
	// (a lease of k keys and expire e renews k keys every max(e/3, 250 ms)).
	DefaultMaxRenewalsPerSecond = 1000
	// DefaultMaxBadFrames is how many invalid frames a connection may send in a burst before it
	// is closed with 1008; the budget refills at one frame per badFrameRefill.
	DefaultMaxBadFrames = 10
)

// Default server-wide limits.
const (
	// DefaultMaxConnections bounds the open connections; beyond it upgrades get 503.
	DefaultMaxConnections = 1024
	// DefaultMaxConnectionsPerToken bounds the open connections of one token.
	DefaultMaxConnectionsPerToken = 256
)

// Default heartbeat and session rules (see docs/bridge-protocol.md).
const (
	// DefaultClientTimeout ends a connection that sent nothing for this long, and is the
	// earliest its leases are freed after its last frame: clients ping every quarter of it.
	DefaultClientTimeout = 4 * time.Second
	// DefaultResumeWindow is how long a session's outcomes are kept after its connection ended.
	DefaultResumeWindow = time.Minute
	// MinClientTimeout is the shortest ClientTimeout accepted.
	MinClientTimeout = 400 * time.Millisecond
)

// Errors of configuration and start-up.
var (
	// ErrNoToken: the bridge has no token and was not started insecure.
	ErrNoToken = errors.New("bridge: no token configured: give --token or BRIDGE_TOKEN, or --insecure on a loopback address")
	// ErrInsecureNotLoopback: --insecure was asked for on an address other machines reach.
	ErrInsecureNotLoopback = errors.New("bridge: --insecure is only allowed on a loopback address (127.0.0.1, ::1 or localhost)")
	// ErrInsecureRestricted: insecure mode was asked for with restricted tokens, whose
	// restriction any client could escape by sending no token at all.
	ErrInsecureRestricted = errors.New("bridge: --insecure cannot be combined with restricted tokens (TOKEN;owner=… or TOKEN;keys=…): a client without a token could use any owner and key; drop --insecure or the prefixes")
	// ErrBadToken: a token (or its owner prefix) cannot be used.
	ErrBadToken = errors.New("bridge: bad token")
	// ErrNoClient: Config.Client is nil.
	ErrNoClient = errors.New("bridge: no Redis client")
)

// Token is one accepted bearer token, optionally restricted to owners that start with
// OwnerPrefix and to keys that start with KeyPrefix.
type Token struct {
	// Secret is the bearer token itself.
	Secret string
	// OwnerPrefix, when set, is the prefix every owner of acquire, release, release_all and
	// settle must have; the connection's leases get owners that start with it.
	OwnerPrefix string
	// KeyPrefix, when set, is the prefix every key of every request must have.
	KeyPrefix string
}

// Restricted reports whether the token limits owners or keys.
func (t Token) Restricted() bool { return t.OwnerPrefix != "" || t.KeyPrefix != "" }

// ParseToken parses "SECRET", optionally followed by ";owner=PREFIX" and ";keys=PREFIX" (in
// any order, each at most once). The secret may not contain ':' ';' ',' or white space; a
// prefix may contain anything but ';', ',' and line breaks, and may not be empty.
func ParseToken(s string) (Token, error) {
	parts := strings.Split(s, ";")
	t := Token{Secret: parts[0]}
	seen := map[string]bool{}
	for _, part := range parts[1:] {
		name, value, ok := strings.Cut(part, "=")
		if !ok || (name != "owner" && name != "keys") {
			return Token{}, fmt.Errorf("%w: %q after the secret: write TOKEN;owner=PREFIX;keys=PREFIX", ErrBadToken, part)
		}
		if seen[name] {
			return Token{}, fmt.Errorf("%w: %s= is given twice", ErrBadToken, name)
		}
		if value == "" {
			return Token{}, fmt.Errorf("%w: empty %s= prefix", ErrBadToken, name)
		}
		seen[name] = true
		if name == "owner" {
			t.OwnerPrefix = value
		} else {
			t.KeyPrefix = value
		}
	}
	return t, t.validate()
}

// validate checks a token however it was made.
func (t Token) validate() error {
	switch {
	case t.Secret == "":
		return fmt.Errorf("%w: empty token", ErrBadToken)
	case strings.ContainsAny(t.Secret, ":;, \t\r\n"):
		return fmt.Errorf("%w: a token may not contain ':', ';', ',' or white space (restrict a token with TOKEN;owner=PREFIX;keys=PREFIX)", ErrBadToken)
	case strings.ContainsAny(t.OwnerPrefix+t.KeyPrefix, ";,\r\n"):
		return fmt.Errorf("%w: a prefix may not contain ';', ',' or line breaks", ErrBadToken)
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
	// FairQueue serves the bridge's waiting requests first come, first served together with
	// every other Provider that has it (provider.Options.FairQueue, docs/waiting.md). Off by
	// default.
	FairQueue bool
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
	// MaxConnections and MaxConnectionsPerToken bound the open connections, in all and per
	// token; beyond them upgrades get 503 with Retry-After. Defaults DefaultMaxConnections and
	// DefaultMaxConnectionsPerToken.
	MaxConnections, MaxConnectionsPerToken int
	// ClientTimeout ends a connection that sent nothing for this long; a connection's leases are
	// never freed before ClientTimeout after the last frame it sent, unless its client released
	// them. Clients ping every quarter of it. Default DefaultClientTimeout, at least
	// MinClientTimeout.
	ClientTimeout time.Duration
	// ResumeWindow is how long the outcomes of a session's requests are kept after its
	// connection ended, for a client that reconnects (resume). Default DefaultResumeWindow.
	ResumeWindow time.Duration
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
	if c.Limits.MinLeaseExpire <= 0 {
		c.Limits.MinLeaseExpire = DefaultMinLeaseExpire
	}
	if c.Limits.MaxRenewalsPerSecond <= 0 {
		c.Limits.MaxRenewalsPerSecond = DefaultMaxRenewalsPerSecond
	}
	if c.MaxBadFrames <= 0 {
		c.MaxBadFrames = DefaultMaxBadFrames
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxConnectionsPerToken <= 0 {
		c.MaxConnectionsPerToken = DefaultMaxConnectionsPerToken
	}
	if c.ClientTimeout <= 0 {
		c.ClientTimeout = DefaultClientTimeout
	}
	c.ClientTimeout = max(c.ClientTimeout, MinClientTimeout)
	if c.ResumeWindow <= 0 {
		c.ResumeWindow = DefaultResumeWindow
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
