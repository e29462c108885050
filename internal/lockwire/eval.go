package lockwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Runner runs the scripts on the locks of one namespace.
type Runner struct {
	// Namespace prefixes every key (the Redis key of lock key k is Namespace+k).
	Namespace string
	// Channel is the wake-up channel, FreeChannel(Namespace): every script's last argument.
	Channel string
	// Send sends cmds in one pipeline (once: go-redis must not resend it; each command is then
	// already marked so). With a nil error each command holds its own reply or error; with an
	// error the call ended before its replies came (the provider's batcher: its context ended)
	// and cmds must not be read.
	Send func(ctx context.Context, cmds []redis.Cmder, once bool) error
}

// Eval runs s over many keys (without namespace) in one pipeline, key i with the arguments
// argsOf(i). results[i] is key i's reply, read with parse, when errs[i] is nil; errs[i] is its
// Redis error (a reply error such as WRONGTYPE, or the transport error when the pipeline
// failed). err is the first transport error, wrapped: then the keys with an error have an
// unknown outcome (the script may have run; unless once, go-redis may even have run it twice),
// while the results of the others are still valid. NOSCRIPT replies (a flushed script cache, a
// failover) are retried once with the full script text.
func Eval[T any](ctx context.Context, r *Runner, s *Script, keys []string, once bool, argsOf func(i int) []any,
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
			cmds[j] = s.Cmd(ctx, r.Namespace+keys[i], attempt > 0, argsOf(i), r.Channel)
			sent[j] = cmds[j]
			if once {
				sent[j] = onceCmd{cmds[j]}
			}
		}
		if cut := r.Send(ctx, sent, once); cut != nil {
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

// onceCmd is a script run that go-redis must not send again after a connection failure: a
// delete under an owner other processes may share, which a resend after a lost reply could
// apply to a lock taken in between.
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to resend the command.
func (onceCmd) NoRetry() bool { return true }

// IsReplyError tells a Redis error reply (the command was refused: an ACL, WRONGTYPE, NOSCRIPT)
// from a transport error and from the replies that mean the server could not run it now
// (IsNetworkReply).
func IsReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil) && !IsNetworkReply(err)
}

// IsNetworkReply reports errors that go-redis types as redis.Error but that mean the server
// could not run the command (LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN: loading,
// failing over); they are treated as transport errors.
func IsNetworkReply(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "READONLY") ||
		strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "CLUSTERDOWN") ||
		strings.HasPrefix(msg, "TRYAGAIN")
}

// MaybeRan reports whether a transport error may have come after the command reached Redis, so
// that its outcome is unknown: anything but a failed dial or a wait for a pooled connection.
func MaybeRan(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return !strings.Contains(err.Error(), "connection pool timeout")
}
