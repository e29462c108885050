package operator

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
	"github.com/locktui/locktui/provider"
)

// Inspector reads and force-releases the locks of one namespace. It is safe for concurrent use
// and owns no goroutine.
type Inspector struct {
	client redis.UniversalClient
	opts   Options
	run    lockwire.Runner
}

// Options tune an Inspector. The zero value (or a nil *Options) reads stock Medusa's namespace.
type Options struct {
	// Namespace is the key prefix of the locks. Default provider.DefaultNamespace; an empty
	// Namespace means the default, as for a Provider.
	Namespace string
	// Observer, when set, receives a provider.EventReleased for every key a force-release
	// deletes, as a Provider's Observer does for its releases (the console's events feed).
	// It is called synchronously and must not block.
	Observer provider.Observer
	// Logger receives a panic of the Observer, which is logged and otherwise ignored. Default
	// slog.Default().
	Logger *slog.Logger
}

// New returns an Inspector on client (standalone, Sentinel or Cluster). opts may be nil. The
// caller keeps ownership of client and closes it.
func New(client redis.UniversalClient, opts *Options) *Inspector {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Namespace == "" {
		o.Namespace = provider.DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	in := &Inspector{client: client, opts: o}
	in.run = lockwire.Runner{Namespace: o.Namespace, Channel: provider.FreeChannel(o.Namespace), Send: in.send}
	return in
}

// Namespace returns the key prefix in use.
func (in *Inspector) Namespace() string { return in.opts.Namespace }

// redisKey is the Redis key of lock key key: Namespace+key, as stock Medusa builds it.
func (in *Inspector) redisKey(key string) string { return in.opts.Namespace + key }

// send sends cmds in one pipeline of its own (lockwire.Runner.Send); the commands hold their
// replies or errors.
func (in *Inspector) send(ctx context.Context, cmds []redis.Cmder, _ bool) error {
	pipe := in.client.Pipeline()
	for _, cmd := range cmds {
		_ = pipe.Process(ctx, cmd)
	}
	_, _ = pipe.Exec(ctx)
	return nil
}

// released tells the Observer that a force-release deleted key, held by owner. An Observer that
// panics is a bug in the caller's metrics or logging: the panic is logged and the release goes
// on.
func (in *Inspector) released(key, owner string) {
	if in.opts.Observer == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			in.opts.Logger.Error("lock event observer panicked", "event", provider.EventReleased, "key", key, "panic", r)
		}
	}()
	in.opts.Observer.LockEvent(provider.Event{Kind: provider.EventReleased, Key: key, Owner: owner, Time: time.Now()})
}
