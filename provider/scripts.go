package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
)

// Statuses of acquire.lua.
const (
	acquireHeld      = 0 // someone else holds the key
	acquireFresh     = 1 // the key was free and is now ours
	acquireReentered = 2 // the owner already held it; the TTL was rewritten
	// acquireOverdue: a process that writes no holder record holds the key and its turn is
	// over (share.go); it counts as held.
	acquireOverdue = 3
	// A negative status -n: the key is free, but left to processes that write no holder
	// record for n more milliseconds (see share.go). It counts as held.
)

// The scripts provider runs (internal/lockwire embeds them with lib.lua).
var (
	acquireScript  = lockwire.Acquire
	extendScript   = lockwire.Extend
	releaseScript  = lockwire.Release
	givebackScript = lockwire.Giveback
	claimedScript  = lockwire.Claimed
	revokeScript   = lockwire.Revoke // ReleaseAll's compare-and-unlink
)

// FreeChannel is the pub/sub channel on which this project's scripts announce that they freed
// a lock of namespace: "locktui:free:" + namespace, outside the namespace. Each message is
// "<queue head ticket>\n<Redis key>" (the ticket empty when nobody queues for the key).
func FreeChannel(namespace string) string { return lockwire.FreeChannel(namespace) }

// recordKey is the key of the holder record of lock key rk (lockwire.RecordKey).
func recordKey(rk string) string { return lockwire.RecordKey(rk) }

// resend says whether go-redis may send a batch again after a connection failure.
type resend bool

const (
	mayResend resend = true  // the scripts give the same result when they run twice
	sendOnce  resend = false // a second run could undo what someone did after the first
)

// scriptBatch runs one script over many keys in a single pipeline, with the same arguments for
// every key, and reads integer replies (see evalBatch).
func (p *Provider) scriptBatch(ctx context.Context, s *lockwire.Script, keys []string, r resend, args ...any) (results []int64, errs []error, err error) {
	return evalBatch(ctx, p, s, keys, r, func(int) []any { return args }, (*redis.Cmd).Int64)
}

// evalBatch runs one script over many keys in a single pipeline, merged with those of concurrent
// calls (see batcher), key i with the arguments argsOf(i), as lockwire.Eval says.
func evalBatch[T any](ctx context.Context, p *Provider, s *lockwire.Script, keys []string, r resend, argsOf func(i int) []any,
	parse func(*redis.Cmd) (T, error)) (results []T, errs []error, err error) {
	return lockwire.Eval(ctx, &p.run, s, keys, r == sendOnce, argsOf, parse)
}

// IsReplyError tells a Redis error reply (the command was refused: an ACL, WRONGTYPE, NOSCRIPT)
// from a transport error and from the replies that mean the server could not run it now
// (LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN), which are transport errors to retry.
func IsReplyError(err error) bool { return lockwire.IsReplyError(err) }

// IsUnreachable reports an error that says Redis could not be reached, or could not take the
// command for now: a failed dial (also go-redis's fast failure after repeated ones), a
// connection that was reset, ended (EOF) or timed out in the middle of a call, no pooled
// connection in time, no Sentinel that answered, and the replies of a server that cannot take
// writes yet (LOADING, READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN). A waiting call retries
// after such an error until it ends (docs/waiting.md), and the CLI's commands retry their first
// round trip; any other error, a reply error such as WRONGTYPE or an ACL refusal above all,
// ends a call at once. A context error alone is not one; a dial cut short by a context is a
// *net.OpError and is one, so a caller looks at its own context first.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return lockwire.IsNetworkReply(re)
	}
	var op *net.OpError
	switch {
	case errors.As(err, &op):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrPoolTimeout) ||
		strings.Contains(err.Error(), "all sentinels specified in configuration are unreachable")
}

// maybeRan reports whether a transport error may have come after the command reached Redis,
// so that its outcome is unknown: anything but a failed dial, a wait for a pooled connection or
// a call that gave up while its request still waited in the batcher's queue.
func maybeRan(err error) bool {
	return !errors.Is(err, errNotSent) && lockwire.MaybeRan(err)
}
