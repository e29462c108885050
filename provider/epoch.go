package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// epochProbe is how often a Provider holding leases reads the run_id of its Redis servers.
const epochProbe = 500 * time.Millisecond

// epochs watches the identity of the Redis server (every master of a Cluster) under a Provider
// while it holds leases. A server that restarted (a new run_id: without persistence it lost
// every key) or a failover (another master, which may have missed the last writes) ends every
// lease at once: its keys may be gone while their holders still believe. The watcher runs only
// while leases exist; the run_ids seen are kept between runs, so a restart while no lease was
// held costs at most the leases taken just before the next probe (lost, never kept wrongly).
type epochs struct {
	p *Provider

	mu      sync.Mutex
	leases  map[*Lease]struct{}
	ids     map[string]string // master address → run_id last seen
	probed  time.Time         // when the last probe started
	running bool
	wake    chan struct{} // closed to stop the watcher when the last lease ends
}

// add registers a lease and starts the watcher if it is not running.
func (e *epochs) add(l *Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases == nil {
		e.leases = map[*Lease]struct{}{}
	}
	e.leases[l] = struct{}{}
	if !e.running {
		e.running = true
		e.wake = make(chan struct{})
		go e.watch(e.wake)
	}
}

// remove unregisters a lease; the watcher stops once none is left.
func (e *epochs) remove(l *Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.leases, l)
	if len(e.leases) == 0 && e.running {
		e.running = false
		close(e.wake)
	}
}

// watch probes every epochProbe until stop is closed. A watcher started again within
// epochProbe of the last probe (the last lease ended and a new one began: one Execute after
// another) waits for the rest of that interval first, so every lease is still probed within
// epochProbe of the previous probe without a probe, and a round trip, per short lease.
func (e *epochs) watch(stop <-chan struct{}) {
	e.mu.Lock()
	first := epochProbe - time.Since(e.probed)
	e.mu.Unlock()
	if first > 0 {
		t := time.NewTimer(first)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
	tick := time.NewTicker(epochProbe)
	defer tick.Stop()
	for {
		e.probe(stop)
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// probe reads the run_ids and ends every lease when they changed. A server that cannot be read
// is skipped: the leases' deadlines cover an unreachable one.
func (e *epochs) probe(stop <-chan struct{}) {
	e.mu.Lock()
	e.probed = time.Now()
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), epochProbe)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	ids, err := runIDs(ctx, e.p.client)
	if err != nil {
		return
	}
	e.mu.Lock()
	before := e.ids
	e.ids = ids
	var lost []*Lease
	if before != nil && !maps.Equal(before, ids) {
		lost = slices.Collect(maps.Keys(e.leases))
	}
	e.mu.Unlock()
	if len(lost) == 0 {
		return
	}
	cause := fmt.Errorf("%w (run_id %s, was %s): keys written before may be gone",
		ErrServerRestarted, describeIDs(ids), describeIDs(before))
	for _, l := range lost {
		l.lose(l.order, cause)
	}
}

// runIDs returns the run_id of the server, or of every master of a Cluster, by address.
func runIDs(ctx context.Context, client redis.UniversalClient) (map[string]string, error) {
	if cluster, ok := client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		ids := map[string]string{}
		err := cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			id, err := runID(ctx, node)
			mu.Lock()
			ids[node.Options().Addr] = id
			mu.Unlock()
			return err
		})
		return ids, err
	}
	id, err := runID(ctx, client)
	return map[string]string{"": id}, err
}

// runID reads one server's run_id from INFO server.
func runID(ctx context.Context, c redis.Cmdable) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id, nil
		}
	}
	return "", fmt.Errorf("redis: INFO server has no run_id")
}

func describeIDs(ids map[string]string) string {
	parts := make([]string, 0, len(ids))
	for _, addr := range slices.Sorted(maps.Keys(ids)) {
		if addr == "" {
			parts = append(parts, ids[addr])
		} else {
			parts = append(parts, addr+"="+ids[addr])
		}
	}
	return strings.Join(parts, ",")
}
