package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/redisconn"
)

// epochProbe is how often a Provider holding leases reads the run_id of its Redis servers.
const epochProbe = 500 * time.Millisecond

// epochRetry is how soon a probe that could not read them is tried again: during an outage
// (a failover) the next server answers a probe within this of its first answer.
const epochRetry = 100 * time.Millisecond

// epochs watches the identity of the Redis server (every master of a Cluster) under a Provider
// while it holds leases. A server that restarted (a new run_id: without persistence it lost
// every key) or a failover (another master, which may have missed the last writes) ends every
// lease at once: its keys may be gone while their holders still believe. The watcher runs only
// while leases exist; the run_ids seen are kept between runs, so a restart while no lease was
// held costs at most the leases taken just before the next probe (lost, never kept wrongly).
// A Provider reads them once before its first lease takes anything (learn).
type epochs struct {
	p *Provider

	mu     sync.Mutex
	leases map[*Lease]struct{}
	ids    map[string]string  // master address → run_id last seen
	probed time.Time          // when the last probe started
	timer  *time.Timer        // fires the next probe; nil once it fired with no lease left
	gen    uint64             // counts the watcher's starts: a probe of an earlier one re-arms nothing
	cancel context.CancelFunc // ends the running watcher's probe in flight
	// changes counts the server changes probes found: a lease whose wait saw one may have
	// taken keys on the old server after the probe that ended the other leases (see add).
	changes uint64
	blind   sync.Once // warns once that the run_id cannot be read (INFO refused)
}

// add registers a lease and starts the watcher if it is not running. The watcher is a timer
// (time.AfterFunc), not a goroutine: starting and stopping it with every short lease costs no
// goroutine. A watcher started again within epochProbe of the last probe (the last lease ended
// and a new one began: one Execute after another) waits for the rest of that interval first,
// so every lease is still probed within epochProbe of the previous probe without a probe, and
// a round trip, per short lease.
//
// since is the count of server changes (changed) before the lease's wait began: when a probe
// found one since, the lease may hold keys of the old server that no later probe would compare
// against it, so add registers nothing and reports false (the caller loses the lease).
func (e *epochs) add(l *Lease, since uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changes != since {
		return false
	}
	if e.leases == nil {
		e.leases = map[*Lease]struct{}{}
	}
	e.leases[l] = struct{}{}
	if e.timer != nil {
		return true
	}
	e.gen++
	gen := e.gen
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.timer = time.AfterFunc(max(epochProbe-time.Since(e.probed), 0), func() { e.tick(ctx, gen) })
	return true
}

// changed returns how many server changes the probes have found so far.
func (e *epochs) changed() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changes
}

// learn reads the run_ids when no probe has yet: a lease must not take anything on a server
// whose identity the provider does not know, or a server change between the take and the first
// probe that answers would pass for the lease's own server (the probe would record the new one
// as the first). It is one round trip, once per Provider.
func (e *epochs) learn(ctx context.Context) error {
	e.mu.Lock()
	known := e.ids != nil
	e.mu.Unlock()
	if known {
		return nil
	}
	ids, err := runIDs(ctx, e.p.client)
	var refused redis.Error
	if errors.As(err, &refused) && !IsUnreachable(err) {
		// INFO refused (an ACL without it): the probes cannot read the run_id either.
		e.blind.Do(func() {
			e.p.opts.Logger.Warn("cannot read the Redis server's run_id, so a restart or failover of Redis is noticed only at each lease's next renewal or deadline; allow INFO for this user (docs/safety.md)",
				"error", err)
		})
		return nil
	}
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.ids == nil {
		e.ids = ids
	}
	e.mu.Unlock()
	return nil
}

// remove unregisters a lease. The watcher's timer stays armed: it stops when it fires with no
// lease left (tick), so that one short lease after another (Execute in a loop) does not start
// and stop a timer each.
func (e *epochs) remove(l *Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.leases, l)
}

// stop stops the watcher (Provider.Close), cutting a probe in flight short.
func (e *epochs) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
		e.cancel()
	}
}

// tick probes and, while the watcher that armed it (gen) still runs, arms the next probe; with
// no lease left, it stops the watcher instead.
func (e *epochs) tick(ctx context.Context, gen uint64) {
	e.mu.Lock()
	if len(e.leases) == 0 {
		if e.timer != nil && e.gen == gen {
			e.timer = nil
			e.cancel()
		}
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	next := epochProbe
	if !e.probe(ctx) {
		next = epochRetry
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.timer != nil && e.gen == gen {
		e.timer.Reset(next)
	}
}

// probe reads the run_ids and ends every lease when they changed; it reports whether it could
// read them. A server that cannot be read is skipped: the leases' deadlines cover an unreachable
// one. ctx ends when the watcher stops.
func (e *epochs) probe(ctx context.Context) bool {
	e.mu.Lock()
	e.probed = time.Now()
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, epochProbe)
	defer cancel()
	ids, err := runIDs(ctx, e.p.client)
	if err != nil {
		return false
	}
	e.mu.Lock()
	before := e.ids
	e.ids = ids
	var lost []*Lease
	if before != nil && !maps.Equal(before, ids) {
		lost = slices.Collect(maps.Keys(e.leases))
		e.changes++
	}
	e.mu.Unlock()
	if len(lost) == 0 {
		return true
	}
	cause := fmt.Errorf("%w (run_id %s, was %s): keys written before may be gone",
		ErrServerRestarted, describeIDs(ids), describeIDs(before))
	for _, l := range lost {
		l.lose(l.order, cause)
	}
	return true
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
	return redisconn.InfoField(ctx, c, "server", "run_id")
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
