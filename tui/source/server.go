package source

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/provider"
)

// ServerInfo is what the console learns about the server once per connection.
type ServerInfo struct {
	// Version is redis_version from INFO server ("" if INFO is not permitted).
	Version string
	// DB is the database the client uses (0 on a Cluster).
	DB int
	// Cluster is true for a Redis Cluster client.
	Cluster bool
	// KeyspaceEvents is the notify-keyspace-events setting ("" when off or unknown).
	KeyspaceEvents string
	// ConfigDenied is true when CONFIG GET was refused (keyspace events are then assumed off).
	ConfigDenied bool
	// Keys is the number of keys in the database when it connected (DBSIZE; 0 when unknown or
	// on a Cluster): how far a first refresh has to walk.
	Keys int
}

// Keyspace reports whether the server publishes the keyspace notifications the console
// needs: keyspace channels (K) for generic (g), string ($) and expiry (x) events, or all (A).
// On a Cluster they are per node, so the console does not use them there.
func (i ServerInfo) Keyspace() bool {
	f := i.KeyspaceEvents
	if i.Cluster || !strings.Contains(f, "K") {
		return false
	}
	return strings.Contains(f, "A") || strings.Contains(f, "g") && strings.Contains(f, "$") && strings.Contains(f, "x")
}

// Ping sends PING and returns the round-trip time.
func (s *Source) Ping(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if err := s.client.Ping(ctx).Err(); err != nil {
		return 0, fmt.Errorf("ping: %w", err)
	}
	return time.Since(start), nil
}

// ServerInfo reads INFO server, DBSIZE and CONFIG GET notify-keyspace-events. A refused INFO or CONFIG
// (an ACL, a managed Redis) leaves the field empty instead of failing; a transport error fails.
func (s *Source) ServerInfo(ctx context.Context) (ServerInfo, error) {
	info := ServerInfo{}
	switch c := s.client.(type) {
	case *redis.Client:
		info.DB = c.Options().DB
	case *redis.ClusterClient:
		info.Cluster = true
	}
	text, err := s.client.Info(ctx, "server").Result()
	switch {
	case err == nil:
		info.Version = infoField(text, "redis_version")
	case !provider.IsReplyError(err):
		return info, fmt.Errorf("info server: %w", err)
	}
	if !info.Cluster {
		n, err := s.client.DBSize(ctx).Result()
		switch {
		case err == nil:
			info.Keys = int(n)
		case !provider.IsReplyError(err):
			return info, fmt.Errorf("dbsize: %w", err)
		}
	}
	cfg, err := s.client.ConfigGet(ctx, "notify-keyspace-events").Result()
	switch {
	case err == nil:
		info.KeyspaceEvents = cfg["notify-keyspace-events"]
	case provider.IsReplyError(err):
		info.ConfigDenied = true
	default:
		return info, fmt.Errorf("config get notify-keyspace-events: %w", err)
	}
	return info, nil
}

// ScriptCalls returns the server's total EVALSHA and EVAL calls (INFO commandstats): the
// attempts of every stock Medusa process, sampled by the console to estimate contention.
func (s *Source) ScriptCalls(ctx context.Context) (int64, error) {
	calls, err := s.CommandCalls(ctx)
	if err != nil {
		return 0, err
	}
	return calls["evalsha"] + calls["eval"], nil
}

// CommandCalls returns the server's calls per command since it started or its statistics were
// reset (INFO commandstats), by lower-case command name ("get", "config|get"), from every
// client: the console's own cost is the difference over a window of a server it alone uses.
func (s *Source) CommandCalls(ctx context.Context) (Calls, error) {
	text, err := s.client.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("info commandstats: %w", err)
	}
	calls := Calls{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, stats, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":") // cmdstat_get:calls=12,usec=…
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		for _, part := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(part, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				calls[name] += n
			}
		}
	}
	return calls, nil
}

// Calls are a server's calls per command (see CommandCalls).
type Calls map[string]int64

// Total is the sum of the calls of every command.
func (c Calls) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

func infoField(text, name string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
