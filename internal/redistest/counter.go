package redistest

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook (client.AddHook) counting the commands a client sends, by name, and
// the round trips they take: a pipeline is one round trip. The connection handshake (HELLO,
// CLIENT, AUTH, SELECT) is not counted, so counts are what the code under test asked for.
type Counter struct {
	mu    sync.Mutex
	cmds  map[string]int
	total int
	trips int
}

// DialHook passes dials through.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one command and one round trip.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts the pipeline's commands and one round trip.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}

func (c *Counter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmds == nil {
		c.cmds = map[string]int{}
	}
	counted := false
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "hello", "client", "auth", "select":
			continue
		}
		c.cmds[cmd.Name()]++
		c.total++
		counted = true
	}
	if counted {
		c.trips++
	}
}

// Count returns how many commands named name (lower case, e.g. "scan") were sent.
func (c *Counter) Count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmds[name]
}

// Trips returns the round trips so far.
func (c *Counter) Trips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

// Reset returns the commands and round trips counted so far and starts again from zero.
func (c *Counter) Reset() (cmds, trips int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmds, trips = c.total, c.trips
	c.cmds, c.total, c.trips = nil, 0, 0
	return cmds, trips
}
