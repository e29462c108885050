package lockwire

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ScanCount is the COUNT hint of every SCAN of a walk: the size of a batch. SCAN walks the whole
// database (MATCH filters after the walk), so each SCAN examines about ScanCount keys of it,
// whatever the namespace holds.
const ScanCount = 100

// Walk walks every key of namespace ns with SCAN … MATCH <ns>* (on every master of a Cluster,
// in parallel) and reads each batch found in one pipeline: read queues perKey reads of each key
// of the batch (without namespace) on pipe and returns what takes their replies once the
// pipeline ran. The SCAN for the next batch rides in that pipeline, so a walk takes one round
// trip per batch plus one. pace, if not nil, is called before each round trip with the SCANs and
// the reads it is about to send (on a Cluster, concurrently for the masters). The functions read
// returns are never called concurrently; an error from one of them or from pace ends the walk
// and is returned as is.
func Walk(ctx context.Context, client redis.UniversalClient, ns string, perKey int,
	pace func(ctx context.Context, scans, reads int) error,
	read func(ctx context.Context, pipe redis.Pipeliner, keys []string) func() error) error {
	if pace == nil {
		pace = func(context.Context, int, int) error { return nil }
	}
	match := LiteralPattern(ns) + "*"
	var mu sync.Mutex // serializes the replies' functions across the masters of a Cluster
	walkNode := func(ctx context.Context, node redis.Cmdable) error {
		if err := pace(ctx, 1, 0); err != nil {
			return err
		}
		redisKeys, cursor, err := node.Scan(ctx, 0, match, ScanCount).Result()
		if err != nil {
			return fmt.Errorf("scan %q: %w", match, err)
		}
		for len(redisKeys) > 0 || cursor != 0 {
			more := 0
			if cursor != 0 {
				more = 1 // the SCAN for the next batch
			}
			if err := pace(ctx, more, perKey*len(redisKeys)); err != nil {
				return err
			}
			pipe := node.Pipeline()
			var done func() error
			if len(redisKeys) > 0 {
				keys := make([]string, len(redisKeys))
				for i, rk := range redisKeys {
					keys[i] = strings.TrimPrefix(rk, ns)
				}
				done = read(ctx, pipe, keys)
			}
			var next *redis.ScanCmd
			if cursor != 0 {
				next = pipe.Scan(ctx, cursor, match, ScanCount)
			}
			_, _ = pipe.Exec(ctx)
			if done != nil {
				mu.Lock()
				err := done()
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if next == nil {
				return nil
			}
			if redisKeys, cursor, err = next.Result(); err != nil {
				return fmt.Errorf("scan %q: %w", match, err)
			}
		}
		return nil
	}
	if cluster, ok := client.(*redis.ClusterClient); ok {
		return cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return walkNode(ctx, node)
		})
	}
	return walkNode(ctx, client)
}
