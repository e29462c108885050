package provider

import (
	"context"
	"fmt"
	"strings"
)

// unknownIfRan marks a transport error after which a delete may have run as ErrOutcomeUnknown.
func unknownIfRan(err error) error {
	if maybeRan(err) {
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return err
}

// Release deletes each key still held by owner ("" means "*"), owner-checked in Lua, and reports
// whether every key was released, as stock does: a missing key or another owner's key gives
// false, yet the matching keys are released. No keys gives true. A Redis error for one key (e.g.
// WRONGTYPE) does not stop the others; the first one is returned, wrapped with its key. The
// delete is never sent twice (another process with the same owner may take a key right after
// it): when the connection fails after it may have run, the error matches ErrOutcomeUnknown.
func (p *Provider) Release(ctx context.Context, keys []string, owner string) (bool, error) {
	if len(keys) == 0 {
		return true, nil
	}
	owner = ownerOrDefault(owner)
	sorted := normalizeKeys(keys)
	res, errs, err := p.deleteBatch(ctx, releaseScript, sorted, sendOnce, owner, nil, 0, true)
	if err != nil {
		return false, fmt.Errorf("release %s: %w", quoteKeys(sorted), unknownIfRan(err))
	}
	all := true
	var firstErr error
	for i, key := range sorted {
		switch {
		case errs[i] != nil:
			all = false
			if firstErr == nil {
				firstErr = fmt.Errorf("release %q: %w", key, errs[i])
			}
		case res[i] != 1:
			all = false
		}
	}
	return all && firstErr == nil, firstErr
}

// ReleaseAll deletes every lock in the namespace whose owner is owner ("" means "*", so named and
// execute locks survive, as in stock) and returns how many it deleted (see ReleaseAllWith; it
// walks as fast as Redis answers).
func (p *Provider) ReleaseAll(ctx context.Context, owner string) (int, error) {
	return p.ReleaseAllWith(ctx, owner, ScanOptions{}, FreeNow, nil)
}

// ReleaseAllWith is ReleaseAll paced by opts. It walks the namespace as ScanWith does (SCAN on
// every master of a Cluster, and a read of each key found) and deletes the keys read as owner's
// with one atomic compare-and-unlink per key, pipelined per batch, so a key that changed owner
// since it was read is never deleted. opts.Pace is called before each round trip, the deletes
// of a batch counted as one read per key. released, if not nil, is called with each lock deleted
// (or whose holder was told) as it was read just before (its Record names the holder cut off),
// never concurrently. It returns how many keys it deleted or told, also when the walk ends early
// with an error (from Redis, ctx or opts.Pace). A key whose delete Redis refused (a reply error such as
// READONLY) does not stop the walk; the first such error is returned at its end, with its key.
//
// mode is TellHolderFirst for an operator's release of an owner's locks (the console's D,
// release-all): the live leases among them are told first (HolderTold, see ForceReleaseHold),
// counted with the keys freed; ReleaseAll, stock's API, frees every one at once (FreeNow), and
// their holders hear of it.
func (p *Provider) ReleaseAllWith(ctx context.Context, owner string, opts ScanOptions, mode ReleaseMode,
	released func(Lock, Revocation)) (int, error) {
	owner = ownerOrDefault(owner)
	n := 0
	var refused error // the first key whose delete Redis refused
	err := p.ScanWith(ctx, opts, func(batch []Lock) error {
		var keys []string
		var mine []Lock
		for _, l := range batch {
			if !l.Foreign && l.Owner == owner {
				keys = append(keys, l.Key)
				mine = append(mine, l)
			}
		}
		if len(keys) == 0 {
			return nil
		}
		if opts.Pace != nil {
			if err := opts.Pace(ctx, 0, len(keys)); err != nil {
				return err
			}
		}
		res, errs, err := p.deleteBatch(ctx, revokeScript, keys, sendOnce, owner, []any{anyHold, mode.arg()}, 0, true)
		if err != nil {
			return unknownIfRan(err)
		}
		for i, key := range keys {
			switch {
			case errs[i] != nil:
				if refused == nil {
					refused = fmt.Errorf("release %q: %w", key, errs[i])
				}
			case revocation(res[i]).Done():
				n++
				if released != nil {
					released(mine[i], revocation(res[i]))
				}
			}
		}
		return nil
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return n, fmt.Errorf("release all locks of %q: %w", owner, err)
	}
	return n, nil
}

// anyHold is revoke.lua's pin for "whichever hold the owner has": releaseAll deletes by owner,
// as stock does.
const anyHold = ""

// LiteralPattern escapes s so that it matches itself literally in a Redis glob pattern (SCAN
// MATCH, PSUBSCRIBE): LiteralPattern(ns)+"*" matches exactly the keys of namespace ns. Stock
// Medusa passes the namespace unescaped, so "*", "?" and "[" in it widen the match to other
// namespaces.
func LiteralPattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
