package demo

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/locktui/locktui/internal/sleep"
	"github.com/locktui/locktui/provider"
)

// initialStuck is how many abandoned locks Run plants before the workers start; the others in
// keySet.stuck appear later (replant).
const initialStuck = 3

// stuckTemplate is an abandoned lock: a key and its dead owner, prefix+suffix ("" for "*").
type stuckTemplate struct {
	key    string
	prefix string // the kind of process, e.g. "migrate:"
	suffix string // the process's id, new each time the lock is planted again
}

// owner returns the owner id ("" is the anonymous owner "*").
func (st stuckTemplate) owner() string { return st.prefix + st.suffix }

// keySet is the shop's data, drawn once from the seed.
type keySet struct {
	carts     []string // hot: every checkout fights over these
	inventory []string
	payments  []string
	orders    []string
	products  []string
	stuck     []stuckTemplate
}

func newKeySet(rng *rand.Rand) keySet {
	ids := func(kind, prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = kind + ":" + medusaID(rng, prefix)
		}
		return out
	}
	k := keySet{
		carts:     ids("cart", "cart", 3),
		inventory: ids("inventory", "iitem", 5),
		payments:  ids("payment", "pay", 3),
		orders:    ids("order", "order", 8),
		products:  ids("product", "prod", 6),
	}
	// The first initialStuck are planted at start; the rest show up later. The stuck inventory
	// item and product are also used by the workers, which then wait for them in vain.
	k.stuck = []stuckTemplate{
		{key: "migration-scripts-running", prefix: "migrate:", suffix: shortID(rng)},
		{key: k.inventory[0], prefix: "worker:inventory-sync-", suffix: shortID(rng)},
		{key: k.products[0]}, // anonymous: only ReleaseAll("*") or a force release clears it
		{key: k.orders[0], prefix: "worker:order-export-", suffix: shortID(rng)},
	}
	return k
}

// crockford is the alphabet of ULIDs, which Medusa ids end with.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// medusaID returns an id shaped like Medusa's: prefix_01J + 23 ULID characters.
func medusaID(rng *rand.Rand, prefix string) string {
	b := []byte(prefix + "_01J")
	for range 23 {
		b = append(b, crockford[rng.IntN(len(crockford))])
	}
	return string(b)
}

// shortID returns 6 lowercase hex digits, like a host or pod suffix.
func shortID(rng *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 6)
	for i := range b {
		b[i] = hex[rng.IntN(len(hex))]
	}
	return string(b)
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// plant takes an abandoned lock: no TTL, and nobody will release it.
func (s *Simulator) plant(ctx context.Context, p *provider.Provider, st stuckTemplate) {
	err := p.Acquire(ctx, []string{st.key}, provider.AcquireOptions{Owner: st.owner(), Expire: provider.NoExpiry})
	s.count(ctx, err)
}

// replant brings abandoned locks back after an operator cleared them, and adds the later ones,
// so the console keeps having suspects. A lock reappears with a new owner (a new crashed pod).
func (s *Simulator) replant(ctx context.Context, w *worker) {
	for w.pause(ctx, 20*time.Second, 40*time.Second) {
		for _, st := range s.keys.stuck {
			if w.rng.IntN(2) == 0 {
				continue
			}
			if n, err := s.client.Exists(ctx, w.p.RedisKey(st.key)).Result(); err != nil || n > 0 {
				continue
			}
			if st.prefix != "" {
				st.suffix = shortID(w.rng)
			}
			s.plant(ctx, w.p, st)
		}
	}
}

// checkout runs Execute on a hot cart, sometimes with an inventory item: contention, waiters,
// renewals during the longer jobs (1 s lease, renewed every 333 ms), and now and then a timeout
// on the stuck inventory item.
func (s *Simulator) checkout(ctx context.Context, w *worker) {
	for w.pause(ctx, 50*time.Millisecond, 300*time.Millisecond) {
		keys := []string{s.keys.carts[min(w.rng.IntN(4), 2)]} // cart 0 is the hottest
		switch r := w.rng.IntN(10); {
		case r == 0:
			keys = append(keys, s.keys.inventory[0]) // stuck: this checkout will time out
		case r < 5:
			keys = append(keys, pick(w.rng, s.keys.inventory[1:]))
		}
		job := w.between(150*time.Millisecond, 800*time.Millisecond)
		err := w.p.Execute(ctx, keys, func(ctx context.Context) error {
			sleep.For(ctx, job)
			return nil
		}, provider.ExecuteOptions{Timeout: 2 * time.Second, Expire: time.Second})
		s.count(ctx, err)
	}
}

// fulfil takes named-owner locks on orders with a TTL; it usually releases them, and sometimes
// forgets, leaving the TTL to clear the key.
func (s *Simulator) fulfil(ctx context.Context, w *worker) {
	owner := "worker:order-fulfillment-" + shortID(w.rng)
	for w.pause(ctx, 100*time.Millisecond, 600*time.Millisecond) {
		key := pick(w.rng, s.keys.orders[1:])
		expire := w.between(5*time.Second, 15*time.Second).Round(time.Second)
		err := w.p.Acquire(ctx, []string{key}, provider.AcquireOptions{Owner: owner, Expire: expire})
		s.count(ctx, err)
		if err != nil {
			continue
		}
		if !w.pause(ctx, 500*time.Millisecond, 3*time.Second) {
			return
		}
		if w.rng.IntN(100) < 15 {
			continue // forgotten: the TTL ends it
		}
		_, err = w.p.Release(ctx, []string{key}, owner)
		s.count(ctx, err)
	}
}

// importProducts holds a few products under one owner, then drops them all with ReleaseAll.
func (s *Simulator) importProducts(ctx context.Context, w *worker) {
	const owner = "worker:product-import"
	for w.pause(ctx, time.Second, 3*time.Second) {
		n := 2 + w.rng.IntN(2)
		perm := w.rng.Perm(len(s.keys.products) - 1)
		keys := make([]string, n)
		for i := range keys {
			keys[i] = s.keys.products[1+perm[i]]
		}
		err := w.p.Acquire(ctx, keys, provider.AcquireOptions{Owner: owner, Expire: 20 * time.Second})
		s.count(ctx, err)
		if err != nil {
			continue
		}
		if !w.pause(ctx, time.Second, 3*time.Second) {
			return
		}
		_, err = w.p.ReleaseAll(ctx, owner)
		s.count(ctx, err)
	}
}

// anonymous takes "*" locks with a short TTL, as code that passes no owner does; a third of
// them are left to expire.
func (s *Simulator) anonymous(ctx context.Context, w *worker) {
	for w.pause(ctx, 300*time.Millisecond, time.Second) {
		key := pick(w.rng, s.keys.products[1:])
		expire := w.between(3*time.Second, 8*time.Second).Round(time.Second)
		err := w.p.Acquire(ctx, []string{key}, provider.AcquireOptions{Expire: expire})
		s.count(ctx, err)
		if err != nil || w.rng.IntN(3) == 0 {
			continue
		}
		if !w.pause(ctx, 500*time.Millisecond, 2*time.Second) {
			return
		}
		_, err = w.p.Release(ctx, []string{key}, "")
		s.count(ctx, err)
	}
}

// sabotageEvery is how often a payment capture has its key deleted under it: the 2nd capture,
// then every 5th.
const sabotageEvery = 5

// capturePayments runs payment captures under Execute; every few captures a "cleanup script"
// deletes the payment's key while the capture runs, so its lease is lost and the job cancelled.
func (s *Simulator) capturePayments(ctx context.Context, w *worker) {
	for n := 0; w.pause(ctx, 200*time.Millisecond, 700*time.Millisecond); n++ {
		key := pick(w.rng, s.keys.payments)
		sabotage := n%sabotageEvery == 1
		job := w.between(300*time.Millisecond, 1200*time.Millisecond)
		err := w.p.Execute(ctx, []string{key}, func(ctx context.Context) error {
			if !sabotage {
				sleep.For(ctx, job)
				return nil
			}
			if !sleep.For(ctx, job/2) {
				return nil
			}
			if err := s.client.Del(ctx, w.p.RedisKey(key)).Err(); err != nil {
				return err
			}
			<-ctx.Done() // the next renewal finds the key gone and cancels the job
			return context.Cause(ctx)
		}, provider.ExecuteOptions{Timeout: 2 * time.Second, Expire: time.Second})
		s.count(ctx, err)
	}
}
