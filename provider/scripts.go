package provider

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/lib.lua
	libSrc string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/giveback.lua
	givebackSrc string
	//go:embed scripts/claimed.lua
	claimedSrc string
	//go:embed scripts/revoke.lua
	revokeSrc string

	acquireScript  = newScript(acquireSrc)
	extendScript   = newScript(extendSrc)
	releaseScript  = newScript(releaseSrc)
	givebackScript = newScript(givebackSrc)
	claimedScript  = newScript(claimedSrc)
	revokeScript   = newScript(revokeSrc)
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

// script is one Lua script of scripts/, with lib.lua in front. Every script runs on one lock
// key, its holder record, its fair queue and the queue's tickets, its share record and its
// contention marker (KEYS[1] to KEYS[6], all in the lock's slot), so it is atomic and slot-safe
// on a Cluster (docs/data-model.md). Its last argument is the wake-up channel (FreeChannel), on
// which the scripts that free a lock announce it while someone contends.
type script struct {
	src string
	sha string
}

// scriptPrelude defines, in front of lib.lua, the constants the scripts share with Go.
var scriptPrelude = shareConstants + recordConstants

func newScript(body string) *script {
	src := scriptPrelude + libFor(body) + body
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// libFunc finds the functions a block of lib.lua defines.
var libFunc = regexp.MustCompile(`(?m)^local function (\w+)\(`)

// libFor is lib.lua with only the blocks (separated by blank lines) that define a function body
// calls, directly or through other functions, and the blocks that define none (comments), in
// lib.lua's order. A script runs its whole text on every call, so each function defined costs
// Redis a closure per call: release.lua needs 4 of lib.lua's 20 (about 1 µs of Redis CPU less
// per execute, measured).
func libFor(body string) string {
	blocks := strings.Split(libSrc, "\n\n")
	defines := make([][]string, len(blocks))
	for i, b := range blocks {
		for _, m := range libFunc.FindAllStringSubmatch(b, -1) {
			defines[i] = append(defines[i], m[1])
		}
	}
	need := make([]bool, len(blocks))
	var visit func(text string)
	visit = func(text string) {
		for i, names := range defines {
			if need[i] || !slices.ContainsFunc(names, func(name string) bool {
				return regexp.MustCompile(`\b` + name + `\(`).MatchString(text)
			}) {
				continue
			}
			need[i] = true
			visit(blocks[i])
		}
	}
	visit(body)
	var kept []string
	for i, b := range blocks {
		if len(defines[i]) == 0 || need[i] {
			kept = append(kept, b)
		}
	}
	return strings.Join(kept, "\n\n") + "\n"
}

// cmd is one run of s on lock key rk with args and then channel (the wake-up channel, the last
// argument of every script): EVALSHA, or EVAL with the whole text when full. Its arguments are
// built in one slice of their final size: this runs twice per execute.
func (s *script) cmd(ctx context.Context, rk string, full bool, args []any, channel string) *redis.Cmd {
	name, body := "evalsha", s.sha
	if full {
		name, body = "eval", s.src
	}
	q, t := queueKeys(rk)
	all := make([]any, 0, 9+len(args)+1)
	all = append(all, name, body, 6, rk, recordKey(rk), q, t, shareKey(rk), waitersKey(rk))
	all = append(all, args...)
	return redis.NewCmd(ctx, append(all, channel)...)
}

// queueKeys are the keys of the wait queue of lock key rk and of its tickets (see queue.go):
// outside every namespace and in rk's Cluster slot, as recordKey.
func queueKeys(rk string) (queue, tickets string) {
	return sideKey(rk, "queue"), sideKey(rk, "tickets")
}

// waitersKey is the key of the contention marker of lock key rk: it exists while a waiting call
// of ours may sleep between attempts on the lock (see waitMarkTTL) or a share record lives, and
// only then do the scripts that free the lock announce it. Outside every namespace and in rk's
// Cluster slot, as recordKey.
func waitersKey(rk string) string { return sideKey(rk, "waiting") }

// FreeChannel is the pub/sub channel on which this project's scripts announce that they freed
// a lock of namespace: "locktui:free:" + namespace, outside the namespace. Each message is
// "<queue head ticket>\n<Redis key>" (the ticket empty when nobody queues for the key).
func FreeChannel(namespace string) string { return "locktui:free:" + namespace }

// recordKey is the key of the holder record of lock key rk: outside every namespace (under
// "locktui:"), and in rk's Cluster slot. A hash tag in rk is kept as the record's own; without
// one, rk itself is the tag. (A key that contains "}" but no hash tag cannot have a record in its
// slot: on a Cluster its scripts fail with CROSSSLOT.) The name changed when the record became a
// string (a hash under ":holder" before), so that older clients never read one they cannot parse.
func recordKey(rk string) string { return sideKey(rk, "hold") }

// sideKey is the key of the side record kind of lock key rk: "locktui:{<rk>}:<kind>", or, when
// rk has a hash tag, "locktui:{<tag>}:<kind>:<rk>", so it is outside every namespace and in rk's
// Cluster slot.
func sideKey(rk, kind string) string {
	if tag, ok := hashTag(rk); ok {
		return "locktui:{" + tag + "}:" + kind + ":" + rk
	}
	return "locktui:{" + rk + "}:" + kind
}

// hashTag returns the part of key that Redis Cluster hashes when it is not the whole key: the
// text between the first "{" and the first "}" after it, if not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// onceCmd is a script run that go-redis must not send again after a connection failure: a
// delete under an owner other processes may share, which a resend after a lost reply could
// apply to a lock taken in between.
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to resend the command.
func (onceCmd) NoRetry() bool { return true }

// resend says whether go-redis may send a batch again after a connection failure.
type resend bool

const (
	mayResend resend = true  // the scripts give the same result when they run twice
	sendOnce  resend = false // a second run could undo what someone did after the first
)

// scriptBatch runs one script over many keys in a single pipeline, with the same arguments for
// every key, and reads integer replies (see evalBatch).
func (p *Provider) scriptBatch(ctx context.Context, s *script, keys []string, r resend, args ...any) (results []int64, errs []error, err error) {
	return evalBatch(ctx, p, s, keys, r, func(int) []any { return args }, (*redis.Cmd).Int64)
}

// evalBatch runs one script over many keys in a single pipeline (merged with those of concurrent
// calls: see batcher), key i with the arguments
// argsOf(i). results[i] is key i's reply, read with parse, when errs[i] is nil; errs[i] is its
// Redis error (a reply error such as WRONGTYPE, or the transport error when the pipeline
// failed). err is the first transport error, wrapped: then the keys with an error have an
// unknown outcome (the script may have run; with mayResend, go-redis may even have run it
// twice), while the results of the others are still valid. NOSCRIPT replies (a flushed script
// cache, a failover) are retried once with the full script text.
func evalBatch[T any](ctx context.Context, p *Provider, s *script, keys []string, r resend, argsOf func(i int) []any,
	parse func(*redis.Cmd) (T, error)) (results []T, errs []error, err error) {
	results = make([]T, len(keys))
	errs = make([]error, len(keys))
	pending := make([]int, len(keys))
	for i := range keys {
		pending[i] = i
	}
	for attempt := 0; attempt < 2 && len(pending) > 0; attempt++ {
		cmds := make([]*redis.Cmd, len(pending))
		sent := make([]redis.Cmder, len(pending))
		for j, i := range pending {
			cmds[j] = s.cmd(ctx, p.RedisKey(keys[i]), attempt > 0, argsOf(i), p.channel)
			sent[j] = cmds[j]
			if r == sendOnce {
				sent[j] = onceCmd{cmds[j]}
			}
		}
		if cut := p.batch.exec(ctx, p.client, sent, r == sendOnce); cut != nil {
			for _, i := range pending {
				errs[i] = cut
			}
			return results, errs, fmt.Errorf("redis: %w", cut)
		}
		var retry []int
		for j, i := range pending {
			v, cmdErr := parse(cmds[j])
			errs[i] = cmdErr
			switch {
			case cmdErr == nil:
				results[i] = v
			case redis.HasErrorPrefix(cmdErr, "NOSCRIPT"):
				retry = append(retry, i)
			case IsReplyError(cmdErr):
			case err == nil:
				err = fmt.Errorf("redis: %w", cmdErr)
			}
		}
		if err != nil {
			return results, errs, err
		}
		pending = retry
	}
	return results, errs, nil
}

// IsReplyError tells a Redis error reply (the command was refused: an ACL, WRONGTYPE, NOSCRIPT)
// from a transport error and from the replies that mean the server could not run it now
// (LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN), which are transport errors to retry.
func IsReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil) && !isNetworkReply(err)
}

// isNetworkReply reports errors that go-redis types as redis.Error but that mean the server
// could not run the command (loading, failing over); they are treated as transport errors.
func isNetworkReply(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "READONLY") ||
		strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "CLUSTERDOWN") ||
		strings.HasPrefix(msg, "TRYAGAIN")
}

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
		return isNetworkReply(re)
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
	if errors.Is(err, errNotSent) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return !strings.Contains(err.Error(), "connection pool timeout")
}
