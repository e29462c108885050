package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// AcquireOptions are the arguments of Acquire, with stock Medusa's meaning.
type AcquireOptions struct {
	// Owner holds the lock; "" means the anonymous owner "*", which is never re-entrant.
	Owner string
	// Expire is the lock's TTL, rounded up to whole seconds (1.5 s gives 2 s; stock rejects
	// fractions with a Redis error); zero means DefaultLeaseExpire (60 s), as for a lease; below
	// one second, negative included, it is 1 s, as stock clamps it. NoExpiry makes a lock that
	// never expires, as stock's acquire does when expire is omitted. The lock is not renewed: a
	// caller that holds it longer than Expire may lose it to the TTL unawares (hold it through
	// AcquireLease or Execute instead, or ask for NoExpiry). A same-owner re-acquire
	// rewrites the TTL, and with NoExpiry clears it (a call that fails puts the previous TTL
	// back; see Acquire).
	Expire time.Duration
	// AwaitQueue waits (with jittered exponential backoff) until every key is free instead of
	// failing at once. Stock Medusa waits forever; here the wait ends with ctx. A release of the
	// key by anyone that the Provider hears of ends the backoff sleep at once (see
	// docs/waiting.md), and with Options.FairQueue the call waits its turn in the key's queue. With an
	// expiry, the keys held while waiting for later ones are extended every Expire/3, and after
	// such a wait every key is confirmed to be the owner's (and extended to the full Expire)
	// before Acquire returns: a key lost meanwhile is waited for again. (A wait that holds no
	// key has nothing to confirm: the attempt that ends it sets the full Expire.)
	AwaitQueue bool
	// Claim identifies this call in the holder record of every lock it takes; default a fresh
	// NewClaim. A caller that may lose track of the call's outcome (a bridge whose client
	// reconnects) passes its own and asks Settle afterwards. Each call needs a claim of its own.
	Claim string
	// Queued, with AwaitQueue, is called as LeaseOptions.Queued is. A caller that starts its
	// next call then must not share the owner between overlapping calls on the same keys: a
	// later call re-enters what the earlier one took, and if both fail the later one's
	// give-back puts back the earlier one's lock.
	Queued func()
	// Holder names the taking process in the holder records (a bridge passes its client's);
	// the zero value writes Options.Holder.
	Holder Holder
}

// Acquire takes every key for opts.Owner. Without AwaitQueue it fails at once with a
// *ConflictError (ErrNotAcquired) naming the first held key in argument order; with AwaitQueue it
// waits until ctx is done (the error then also matches ctx's cause, e.g. context.Canceled). Keys
// are de-duplicated and taken in sorted order. A Redis error is returned wrapped with the key.
//
// A call that fails leaves nothing behind: every lock it took is deleted and every lock its
// owner already held and it re-entered gets back the expiry it had, each only where nothing
// changed since (the holder record still names this call and the lock still has the expiry the
// call left), so a later re-entry by the same owner in another process is never undone. This
// holds also for a key whose reply was lost (the script may have run, or run twice when
// go-redis resent it). When Redis cannot be reached to undo the call, the error matches
// ErrOutcomeUnknown: the keys may still be held by the owner. One limit remains, for owners
// shared with processes that write no holder record (stock Medusa): a re-entry by such a
// process within 2 ms of this call's write, with the same TTL, or without expiry on a lock this
// call left without expiry, cannot be told from this call's own write.
func (p *Provider) Acquire(ctx context.Context, keys []string, opts AcquireOptions) error {
	_, err := p.AcquireTokens(ctx, keys, opts)
	return err
}

// AcquireTokens is Acquire that also returns the fencing token of every key it took (see
// docs/fencing.md): a new one for a key that was free, the hold's own for a key its owner
// already held (a new one when no holder record of ours describes that hold: a stock process
// took the key under the same owner). On failure the map is nil.
func (p *Provider) AcquireTokens(ctx context.Context, keys []string, opts AcquireOptions) (map[string]int64, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	h := p.newHoldings(ownerOrDefault(opts.Owner), opts.Claim, opts.Holder)
	ttl := ttlSeconds(acquireExpire(opts.Expire))
	var err error
	if opts.AwaitQueue {
		_, err = p.acquireQueued(ctx, keys, h, ttl, opts.Queued, false)
	} else {
		err = p.acquireOnce(ctx, keys, h, ttl)
	}
	if err != nil {
		return nil, err
	}
	return h.tokens, nil
}

// acquireOnce tries every key once, in one pipeline, and rolls back on any failure.
func (p *Provider) acquireOnce(ctx context.Context, keys []string, h *holdings, ttl int64) error {
	sorted := normalizeKeys(keys)
	h.touch(sorted...)
	res, errs, err := p.acquireBatch(ctx, sorted, h, ttl, false)
	h.unsent(sorted, err)
	if err != nil {
		return h.failed(p.putBack(ctx, h), fmt.Errorf("acquire %s: %w", quoteKeys(sorted), err))
	}
	failed := map[string]error{}
	for i, key := range sorted {
		switch {
		case errs[i] != nil:
			failed[key] = fmt.Errorf("acquire %q: %w", key, errs[i])
		case isHeld(res[i]):
			failed[key] = notAcquired(key)
		}
	}
	if len(failed) == 0 {
		for _, key := range sorted {
			p.emit(EventAcquired, key, h.owner, 0, 0)
		}
		return nil
	}
	undoErr := p.putBack(ctx, h)
	for _, key := range sorted {
		if failed[key] != nil {
			p.emit(EventGaveUp, key, h.owner, 0, 0)
		}
	}
	// Report the first failing key in the caller's order, as stock does.
	for _, key := range keys {
		if ferr, ok := failed[key]; ok {
			return h.failed(undoErr, ferr)
		}
	}
	return nil // unreachable: every failed key is one of keys
}

// Fair-queue modes of acquire.lua (ARGV[4]).
const (
	queueIgnore = ""      // stock's behaviour: the queue is not looked at
	queueCheck  = "check" // take a free key only when nobody else queues for it
	queueJoin   = "join"  // the same, and join the queue (or refresh the ticket) when held
)

// acquireBatch runs acquire.lua over keys in a single pipeline (see evalBatch). join is set for
// the attempts of a waiting call: with Options.FairQueue the call respects the keys' queues and,
// with join, joins the queue of the first key with its claim as ticket if it cannot take it (see
// queue.go); and only a waiting call leaves a free key to others in their turn (share.go: on
// keys this Provider found held lately, the only ones whose share record it reads): a try-once
// acquisition takes a free key, as stock's does; a waiting call's attempt that does not take a
// key marks a waiter on it (waitMarkTTL), so that its release is announced. A resend by
// go-redis is harmless: its second run re-enters what the first took, under the same claim,
// which a give-back undoes in turn (a ticket is refreshed, not added twice), and gets the same
// fencing token; for the anonymous owner "*", which never re-enters, the second run finds the
// key held and the call waits until its timeout gives the key back. The token of every key
// taken is noted in h.
func (p *Provider) acquireBatch(ctx context.Context, keys []string, h *holdings, ttl int64, join bool) ([]int64, []error, error) {
	ticketTTL := p.opts.QueueTicketTTL.Milliseconds()
	markTTL := strconv.FormatInt(p.waitMarkTTL().Milliseconds(), 10)
	who := h.holder.arg()
	lease := "" // a plain acquisition: its holder is never told of a force-release
	if h.lease {
		lease = strconv.FormatInt(ttl, 10)
	}
	now := time.Now()
	grants, errs, err := evalBatch(ctx, p, acquireScript, keys, mayResend, func(i int) []any {
		mode := queueIgnore
		switch {
		case !p.opts.FairQueue:
		case join && i == 0:
			mode = queueJoin
		default:
			mode = queueCheck
		}
		waiting := "" // a try-once acquisition: no waiter to mark
		if join {
			waiting = markTTL
		}
		turns := ""
		if p.contended.recent(keys[i], now) {
			turns = "1"
		}
		return []any{h.owner, ttl, h.claim, mode, ticketTTL, waiting, who, turns, lease}
	}, parseGrant)
	status := make([]int64, len(keys))
	for i, g := range grants {
		status[i] = g.status
		switch {
		case errs[i] != nil:
		case isHeld(g.status):
			p.contended.note(keys[i], now)
		default:
			h.tokens[keys[i]] = g.token
		}
	}
	return status, errs, err
}

// grant is acquire.lua's reply: its status and, when the call holds the key, its fencing token.
type grant struct{ status, token int64 }

// parseGrant reads acquire.lua's reply {status, token}.
func parseGrant(cmd *redis.Cmd) (grant, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return grant{}, err
	}
	if len(v) != 2 {
		return grant{}, fmt.Errorf("acquire.lua replied %v, want {status, token}", v)
	}
	return grant{status: v[0], token: v[1]}, nil
}

// holdings is what an acquisition must undo if it fails: every key it sent acquire.lua for,
// whatever the reply (a reply may have been lost, or a resent request may report a re-entry of
// what the first run took). giveback.lua undoes, claim-checked, only what this call did.
type holdings struct {
	owner   string
	claim   string
	holder  Holder // the taking process, in the holder records
	lease   bool   // a lease's: its holder records say so, and it is told of a revocation
	touched map[string]bool
	tokens  map[string]int64 // the fencing token of every key an attempt took
	// inFlight are the pipelines of attempts the call stopped waiting for (inFlightError):
	// a put-back waits for them, so that it cannot overtake what it undoes.
	inFlight []<-chan struct{}
}

// newHoldings starts the holdings of one call; claim "" gets a fresh one, a zero holder the
// Provider's (see Holder).
func (p *Provider) newHoldings(owner, claim string, holder Holder) *holdings {
	if claim == "" {
		claim = NewClaim()
	}
	return &holdings{owner: owner, claim: claim, holder: p.opts.Holder.forCall(holder),
		touched: map[string]bool{}, tokens: map[string]int64{}}
}

// touch notes keys the call is about to send acquire.lua for.
func (h *holdings) touch(keys ...string) {
	for _, k := range keys {
		h.touched[k] = true
	}
}

// unsent forgets keys again when err says that their acquire.lua never reached Redis (a dial
// failure): there is nothing to undo on them. When err says that it is still in flight
// (inFlightError), it remembers the pipeline for putBack to wait for.
func (h *holdings) unsent(keys []string, err error) {
	if err == nil {
		return
	}
	if ife := (*inFlightError)(nil); errors.As(err, &ife) {
		h.inFlight = append(h.inFlight, ife.done)
	}
	if maybeRan(err) {
		return
	}
	for _, k := range keys {
		delete(h.touched, k)
	}
}

// detach moves keys out of h, into holdings of their own that the caller puts back at once.
func (h *holdings) detach(keys []string) *holdings {
	out := &holdings{owner: h.owner, claim: h.claim, holder: h.holder, touched: map[string]bool{}, tokens: map[string]int64{},
		inFlight: h.inFlight}
	for _, key := range keys {
		if h.touched[key] {
			out.touched[key] = true
			delete(h.touched, key)
			delete(h.tokens, key)
		}
	}
	return out
}

// failed is the error of a call that failed with err after its give-back returned undoErr: err
// itself when the give-back worked (nothing is left behind), else both, matching
// ErrOutcomeUnknown.
func (h *holdings) failed(undoErr, err error) error {
	if undoErr == nil {
		return err
	}
	return fmt.Errorf("%w; %w: the keys %s may still be held by %q, which could not be undone: %w",
		err, ErrOutcomeUnknown, quoteKeys(slices.Sorted(maps.Keys(h.touched))), h.owner, undoErr)
}

// putBack undoes a failed acquisition, even after ctx ended: see giveBack. It first waits for
// the attempts still in flight (holdings.inFlight), at most cleanupTimeout whatever ctx's
// deadline: sent before them, on another connection, the give-back could find nothing to undo
// and the attempt then take the keys for a call that has already failed. An attempt still in
// flight after that makes the result an error (the keys may stay held), give-back or not.
func (p *Provider) putBack(ctx context.Context, h *holdings) error {
	keys := slices.Sorted(maps.Keys(h.touched))
	var pending error
	if len(keys) > 0 && len(h.inFlight) > 0 {
		wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, done := range h.inFlight {
			select {
			case <-done:
			case <-wait.Done():
				pending = fmt.Errorf("an attempt on them was still unanswered after %s", cleanupTimeout)
			}
		}
	}
	return errors.Join(p.giveBack(ctx, keys, h.owner, h.claim), pending)
}

// giveBack undoes, on each of keys, what acquisition claim did for owner (giveback.lua: a lock
// it took is deleted, one it re-entered gets back its earlier expiry and record; a key of
// another type is left alone), even after ctx ended. It emits no event: observers were never told that the call held these keys
// (EventAcquired is only sent once a call holds every key), and EventGaveUp already ends its
// story. A Redis error is logged and returned.
func (p *Provider) giveBack(ctx context.Context, keys []string, owner, claim string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	_, errs, err := p.deleteBatch(ctx, givebackScript, keys, mayResend, owner, []any{claim}, 0, false)
	if err == nil {
		// A key that holds another type is not a lock: there is nothing of ours to undo.
		err = errors.Join(slices.DeleteFunc(slices.Clone(errs), isWrongType)...)
	}
	if err != nil {
		p.opts.Logger.Warn("Failed to give back locks after a failed acquisition; they expire with their TTL",
			"keys", keys, "owner", owner, "error", err)
	}
	return err
}
