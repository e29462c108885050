// Package redisconn opens a go-redis UniversalClient from the URLs Medusa's redisUrl accepts,
// extended to Sentinel and Cluster:
//
//	redis://[user:password@]host:port[/db]               standalone (rediss:// for TLS)
//	redis://host:26379/0?master_name=mymaster&addr=h2:26379   Sentinel (the hosts are sentinels)
//	redis://host:7000?cluster=true&addr=h2:7001           Cluster
//
// Other query parameters are go-redis option names in snake case (dial_timeout=3s, …).
//
// It also holds what the CLI, the console and the bridge share about a connection: Describe (a
// URL without its password), LogTo (go-redis's own log lines), EvictionPolicy and
// EvictionWarning (a server that may evict held locks), and GuardReadOnly (a client that refuses
// every command that is not a read).
package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/redis/go-redis/v9"
)

// ErrBadURL is returned for a URL no client can be made from.
var ErrBadURL = errors.New("redisconn: bad Redis URL")

// DefaultURL is used when neither a flag nor REDIS_URL names a server.
const DefaultURL = "redis://localhost:6379"

// TLSFiles are optional PEM files for rediss:// connections.
type TLSFiles struct {
	CA   string // CA bundle that signed the server certificate
	Cert string // client certificate, with Key, for mutual TLS
	Key  string
}

// Open returns a client for rawURL. The URL is validated here; the connection is made lazily.
// Context deadlines and cancellation cut Redis I/O that is under way (go-redis's
// ContextTimeoutEnabled), so a cancelled command never outlives its caller's context.
func Open(rawURL string, files TLSFiles) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, badURL(rawURL, parseProblem(rawURL))
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, badURL(rawURL, "the scheme must be redis:// or rediss://")
	}
	if u.Host == "" {
		return nil, badURL(rawURL, "no host")
	}
	q := u.Query()
	var tlsConf *tls.Config
	if u.Scheme == "rediss" {
		if tlsConf, err = files.config(u.Hostname()); err != nil {
			return nil, err
		}
	}
	switch {
	case q.Get("cluster") != "":
		q.Del("cluster")
		u.RawQuery = q.Encode()
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, badURL(rawURL, reason(err, u))
		}
		if tlsConf != nil {
			o.TLSConfig = tlsConf
		}
		o.ContextTimeoutEnabled = true
		return redis.NewClusterClient(o), nil
	case q.Get("master_name") != "":
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, badURL(rawURL, reason(err, u))
		}
		if tlsConf != nil {
			o.TLSConfig = tlsConf
		}
		o.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(o), nil
	default:
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, badURL(rawURL, reason(err, u))
		}
		if tlsConf != nil {
			o.TLSConfig = tlsConf
		}
		o.ContextTimeoutEnabled = true
		return redis.NewClient(o), nil
	}
}

// badURL is ErrBadURL for rawURL, shown redacted, with why. why must hold no password (see
// parseProblem and reason): the error that caused it is deliberately not wrapped, since its
// text may quote the whole URL.
func badURL(rawURL, why string) error {
	return fmt.Errorf("%w %q: %s", ErrBadURL, redact(rawURL), why)
}

func (f TLSFiles) config(serverName string) (*tls.Config, error) {
	conf := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("redisconn: read TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redisconn: TLS CA %s holds no PEM certificate", f.CA)
		}
		conf.RootCAs = pool
	}
	if f.Cert != "" || f.Key != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("redisconn: load TLS client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// Describe returns the URL without its passwords, for status bars and logs. It never returns a
// password, not even of a URL that does not parse (see redact).
func Describe(rawURL string) string { return redact(rawURL) }
