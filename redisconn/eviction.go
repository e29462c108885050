package redisconn

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// NoEviction is the one maxmemory-policy under which Redis never evicts a held lock.
const NoEviction = "noeviction"

// EvictionPolicy reads the server's maxmemory-policy from INFO memory (also where CONFIG is
// refused): on a Cluster, the first master's policy other than noeviction, if any. Any other
// policy (allkeys-*, and volatile-*, since every lock of a lease has a TTL) lets Redis evict held
// locks under memory pressure (see EvictionWarning).
func EvictionPolicy(ctx context.Context, c redis.UniversalClient) (string, error) {
	cluster, ok := c.(*redis.ClusterClient)
	if !ok {
		return policyOf(ctx, c)
	}
	var mu sync.Mutex
	policy := NoEviction
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		p, err := policyOf(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && p != NoEviction {
			policy = p
		}
		return err
	})
	return policy, err
}

// policyOf reads one server's maxmemory_policy.
func policyOf(ctx context.Context, c redis.Cmdable) (string, error) {
	return InfoField(ctx, c, "memory", "maxmemory_policy")
}

// InfoField reads one field of one INFO section of the server c talks to.
func InfoField(ctx context.Context, c redis.Cmdable, section, field string) (string, error) {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("redis: INFO %s has no %s", section, field)
}

// EvictionWarning is the one line every part says about a policy that can evict held locks
// ("" for noeviction or an unknown policy): what it costs and what to set instead.
func EvictionWarning(policy string) string {
	if policy == "" || policy == NoEviction {
		return ""
	}
	return fmt.Sprintf("Redis maxmemory-policy is %s: under memory pressure Redis may evict held locks, and their holders learn of it only at their next renewal while another process may take the keys; set maxmemory-policy noeviction on the Redis that holds locks (docs/safety.md)", policy)
}
