package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
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
// execute locks survive, as in stock) and returns how many it deleted. It walks the namespace
// with SCAN on every master of a Cluster, reads the owner of each key found, and deletes the
// keys read as owner's with one atomic compare-and-unlink per key, pipelined per batch, so a key
// that changed owner since it was read is never deleted. A live lease among them is freed at
// once, and its holder hears of it (an operator's ReleaseAllWith tells such holders first
// instead). It returns how many keys it deleted, also when the walk ends early with an error. A
// key whose delete Redis refused (a reply error such as READONLY) does not stop the walk; the
// first such error is returned at its end, with its key.
func (p *Provider) ReleaseAll(ctx context.Context, owner string) (int, error) {
	owner = ownerOrDefault(owner)
	n := 0
	var refused error // the first key whose delete Redis refused
	err := lockwire.Walk(ctx, p.client, p.opts.Namespace, 1, nil,
		func(ctx context.Context, pipe redis.Pipeliner, keys []string) func() error {
			gets := make([]*redis.StringCmd, len(keys))
			for i, key := range keys {
				gets[i] = pipe.Get(ctx, p.RedisKey(key))
			}
			return func() error {
				var mine []string
				for i, key := range keys {
					switch held, err := gets[i].Result(); {
					case err == nil && held == owner:
						mine = append(mine, key)
					case err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "WRONGTYPE"):
						return fmt.Errorf("read %q: %w", key, err)
					}
				}
				if len(mine) == 0 {
					return nil
				}
				res, errs, err := p.deleteBatch(ctx, revokeScript, mine, sendOnce, owner,
					[]any{lockwire.AnyHold, lockwire.RevokeNow}, 0, true)
				if err != nil {
					return unknownIfRan(err)
				}
				for i, key := range mine {
					switch {
					case errs[i] != nil:
						if refused == nil {
							refused = fmt.Errorf("release %q: %w", key, errs[i])
						}
					case res[i] == 1:
						n++
					}
				}
				return nil
			}
		})
	if err == nil {
		err = refused
	}
	if err != nil {
		return n, fmt.Errorf("release all locks of %q: %w", owner, err)
	}
	return n, nil
}
