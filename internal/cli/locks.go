package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// checkKeys refuses a command line without keys or with an empty key (an unset shell variable).
func checkKeys(cmd string, keys []string) error {
	if len(keys) == 0 {
		return usagef(cmd, "%s needs at least one KEY", cmd)
	}
	if slices.Contains(keys, "") {
		return usagef(cmd, "empty KEY; lock keys are non-empty strings")
	}
	return nil
}

// checkOwner requires --owner with a non-empty value.
func checkOwner(cmd string, o *options) error {
	if !o.set["owner"] {
		return usagef(cmd, "%s needs --owner OWNER (\"*\" for the anonymous owner)", cmd)
	}
	if o.owner == "" {
		return usagef(cmd, "--owner is empty; use \"*\" for the anonymous owner")
	}
	return nil
}

func runAcquire(ctx context.Context, s *session, o *options, p parsedArgs) int {
	keys := p.all()
	if err := checkKeys("acquire", keys); err != nil {
		return s.fail(err)
	}
	if err := checkOwner("acquire", o); err != nil {
		return s.fail(err)
	}
	var c *conn
	var err error
	left := o.wait // what is left of --wait once Redis answered
	if o.wait > 0 {
		c, left, err = s.connectWaiting(ctx, o, "--wait", o.wait)
	} else {
		c, err = s.connect(ctx, o)
	}
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	s.warnEviction(ctx, c)

	// Without --expire (or with --expire 0) the lock never expires, as stock's acquire.
	opts := provider.AcquireOptions{Owner: o.owner, Expire: provider.StockAcquireExpire(o.expire)}
	actx := ctx
	if o.wait > 0 {
		opts.AwaitQueue = true
		sigs, unsubscribe := s.subscribe()
		defer unsubscribe()
		var stopWatch, cancel func()
		actx, stopWatch = cancelOnSignal(ctx, sigs)
		defer stopWatch()
		actx, cancel = context.WithTimeout(actx, left)
		defer cancel()
	}
	err = c.p.Acquire(actx, keys, opts)
	if se, ok := interrupted(actx); ok && err != nil {
		s.errorf("%s while waiting for %s; any key this call took was given back", se, quoteKeys(keys))
		return se.exitCode()
	}
	if ctx.Err() != nil && err != nil {
		return s.fail(context.Cause(ctx))
	}
	var ce *provider.ConflictError
	if errors.As(err, &ce) && errors.Is(err, provider.ErrNotAcquired) && !errors.Is(err, provider.ErrOutcomeUnknown) {
		msg := ce.Error()
		if down := (*provider.UnreachableError)(nil); errors.As(err, &down) {
			// Nobody may hold the keys: an error, not a conflict.
			s.errorf("%s after waiting %s; %s", msg, o.wait, down)
			return ExitError
		}
		if len(ce.Keys) == 1 {
			if h := holderOf(ctx, c.ops, ce.Keys[0]); h != "" {
				msg += " (held by " + h + ")"
			}
		}
		if o.wait > 0 {
			msg += fmt.Sprintf(" after waiting %s", o.wait)
		}
		s.errorf("%s", msg)
		return ExitConflict
	}
	if err != nil {
		return s.fail(err)
	}
	expiry := "never expires"
	if o.expire > 0 {
		expiry = "expires in " + effectiveTTL(o.expire).String()
	}
	fmt.Fprintf(s.stdout, "acquired %s for owner %q; %s\n", quoteKeys(keys), o.owner, expiry)
	if !o.set["expire"] {
		s.warnf("the lock never expires (no --expire); give it back with: locktui release KEY... --owner %q", o.owner)
	}
	return ExitOK
}

// effectiveTTL is the TTL the provider sets for d: whole seconds rounded up, at least 1 s.
func effectiveTTL(d time.Duration) time.Duration {
	return time.Duration(max(1, math.Ceil(d.Seconds()))) * time.Second
}

func runRelease(ctx context.Context, s *session, o *options, p parsedArgs) int {
	keys := p.all()
	if err := checkKeys("release", keys); err != nil {
		return s.fail(err)
	}
	switch {
	case o.force && o.set["owner"]:
		return s.fail(usagef("release", "give either --owner or --force, not both"))
	case !o.force && !o.set["owner"]:
		return s.fail(usagef("release", "release needs --owner OWNER or --force"))
	case !o.force:
		if err := checkOwner("release", o); err != nil {
			return s.fail(err)
		}
	}
	tr, err := s.openTrail(ctx, o)
	if err != nil {
		return s.fail(err)
	}
	defer tr.Close()

	all := true
	seen := map[string]bool{}
	for _, key := range keys {
		if seen[key] {
			continue
		}
		seen[key] = true
		released, err := s.releaseOne(ctx, tr, key, o)
		if err != nil {
			return s.fail(err)
		}
		all = all && released
	}
	if !all {
		return ExitConflict
	}
	return ExitOK
}

// releaseOne releases one key as release asks, audits it (audit.Releaser, the console's path),
// and reports the outcome: released keys on stdout, the others on stderr with the reason.
// --force is audited as force_release_any with the owner the key had; --owner as
// force_release, the owner-checked compare-and-delete the console's d does (see the package
// documentation). A live lease's holder is told first (unless --now), and the key followed
// until it is freed (waitFreed).
func (s *session) releaseOne(ctx context.Context, tr *trail, key string, o *options) (bool, error) {
	var r audit.Released
	mode := operator.TellHolderFirst
	if o.now {
		mode = operator.FreeNow
	}
	action := audit.ActionForceRelease
	if o.force {
		action = audit.ActionForceReleaseAny
		r = tr.ForceReleaseAny(ctx, key, mode)
	} else {
		r = tr.ForceReleaseOwner(ctx, key, o.owner, mode)
	}
	toldAt := time.Now()
	owned := ""
	if o.force {
		owned = fmt.Sprintf(" (owner %q)", r.Owner)
	}
	switch {
	case r.Err != nil:
	case r.How == operator.HolderTold:
		fmt.Fprintf(s.stdout, "told the holder of %q%s at %s: %s\n", key, owned, toldAt.UTC().Format(time.RFC3339Nano), r.Holder)
	case r.Count == 0:
		s.whyNotReleased(ctx, tr.Inspector, key, o.owner)
	default:
		fmt.Fprintf(s.stdout, "released %q%s\n", key, owned)
	}
	tr.warnAudit(action, key, r)
	if r.How == operator.HolderTold {
		s.waitFreed(ctx, tr, key, o, r, toldAt)
	}
	return r.How.Done(), r.Err
}

// waitFreed follows a key whose holder release told first until it is freed (by the holder's
// release or its TTL), up to --wait (without it, the key's TTL and a second), and says when.
func (s *session) waitFreed(ctx context.Context, tr *trail, key string, o *options, r audit.Released, toldAt time.Time) {
	limit := o.wait
	if !o.set["wait"] {
		limit = time.Second
		if l, held, err := tr.Inspector.Get(ctx, key); err == nil && held && l.TTL > 0 {
			limit += l.TTL
		}
	}
	if limit <= 0 {
		return
	}
	wait, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	freed, done := tr.AwaitFreed(wait, key, r, toldAt)
	if freed.IsZero() {
		s.errorf("%q is still held %s after its holder was told", key, time.Since(toldAt).Round(time.Millisecond))
	} else {
		fmt.Fprintf(s.stdout, "freed %q at %s, %s after its holder was told\n", key, freed.UTC().Format(time.RFC3339Nano),
			freed.Sub(toldAt).Round(time.Millisecond))
	}
	tr.warnAudit(audit.ActionFreed, key, done)
}

// whyNotReleased says on stderr why key was not released for owner ("" for any owner).
func (s *session) whyNotReleased(ctx context.Context, ops *operator.Inspector, key, owner string) {
	switch l, held, err := ops.Get(ctx, key); {
	case err != nil || !held:
		s.errorf("%q is not locked", key)
	case l.Foreign:
		s.errorf("%q is not a lock (a key of another type); not released", key)
	case owner != "":
		s.errorf("%q is held by %q, not %q", key, l.Owner, owner)
	default:
		s.errorf("%q changed hands while being released; try again", key)
	}
}

func runReleaseAll(ctx context.Context, s *session, o *options, p parsedArgs) int {
	if args := p.all(); len(args) > 0 {
		return s.fail(usagef("release-all", "release-all takes no KEY arguments, got %q (use release for keys)", args[0]))
	}
	if err := checkOwner("release-all", o); err != nil {
		return s.fail(err)
	}
	tr, err := s.openTrail(ctx, o)
	if err != nil {
		return s.fail(err)
	}
	defer tr.Close()
	mode := operator.TellHolderFirst
	if o.now {
		mode = operator.FreeNow
	}
	told := 0
	tr.OnReleased = func(_ operator.Lock, how operator.Revocation) {
		if how == operator.HolderTold {
			told++
		}
	}
	r := tr.ReleaseOwner(ctx, o.owner, mode)
	tr.warnAudit(audit.ActionReleaseOwner, "", r)
	noun := "locks"
	if r.Count == 1 {
		noun = "lock"
	}
	if r.Err != nil {
		// A paced walk stopped part-way (Ctrl-C, a lost connection): say what it did release.
		return s.fail(fmt.Errorf("released %d %s of owner %q, then stopped: %w", r.Count, noun, o.owner, r.Err))
	}
	fmt.Fprintf(s.stdout, "released %d %s of owner %q", r.Count, noun, o.owner)
	if told > 0 {
		fmt.Fprintf(s.stdout, " (the holders of %d live leases were told first: they release their keys)", told)
	}
	fmt.Fprintln(s.stdout)
	return ExitOK
}
