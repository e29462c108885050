package provider

import (
	"context"
	"errors"
	"fmt"
)

// Settle finds out how an acquisition whose outcome its caller lost ended (a reply lost with a
// connection, a bridge that restarted): it reports true when owner holds every key under claim
// (the Claim that Acquire was given), so the acquisition succeeded and its locks are still its
// own. Otherwise it undoes whatever the claim still holds on any of the keys (as a failed
// Acquire does) and reports false: nothing of that acquisition is left, and the caller may try
// again with a new claim. Settle is only meaningful once the acquisition can no longer run (its
// caller, process or connection is gone); a Redis error matches ErrOutcomeUnknown.
func (p *Provider) Settle(ctx context.Context, keys []string, owner, claim string) (bool, error) {
	tokens, err := p.SettleTokens(ctx, keys, owner, claim)
	return tokens != nil, err
}

// SettleTokens is Settle that also returns, when the acquisition holds every key, the fencing
// token of each (the one its holder record carries: what AcquireTokens would have returned), in
// the same round trip. When it did not, the map is nil.
func (p *Provider) SettleTokens(ctx context.Context, keys []string, owner, claim string) (map[string]int64, error) {
	if len(keys) == 0 {
		return map[string]int64{}, nil
	}
	if claim == "" {
		return nil, fmt.Errorf("%w: settle needs the claim of the acquisition", ErrInvalidArgument)
	}
	owner = ownerOrDefault(owner)
	sorted := normalizeKeys(keys)
	res, errs, err := p.scriptBatch(ctx, claimedScript, sorted, mayResend, owner, claim)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w: %w", quoteKeys(sorted), ErrOutcomeUnknown, err)
	}
	tokens := make(map[string]int64, len(sorted))
	for i, token := range res {
		if token > 0 {
			tokens[sorted[i]] = token
		}
	}
	if len(tokens) == len(sorted) {
		return tokens, nil
	}
	if err := p.giveBack(ctx, sorted, owner, claim); err != nil {
		return nil, fmt.Errorf("settle %s: %w: %w", quoteKeys(sorted), ErrOutcomeUnknown, err)
	}
	return nil, nil
}
