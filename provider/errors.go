package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, checked with errors.Is. The errors the provider returns carry Medusa's exact
// messages (see ConflictError), so a bridge can forward them verbatim.
var (
	// ErrNotAcquired: a key is held by another owner and the caller did not wait.
	ErrNotAcquired = errors.New("provider: lock not acquired")
	// ErrTimedOut: Execute or a lease did not get every key within its timeout.
	ErrTimedOut = errors.New("provider: timed out acquiring lock")
	// ErrLockLost: a lease could not be renewed because its key expired or changed owner.
	ErrLockLost = errors.New("provider: lock lost")
	// ErrInvalidArgument: a call was made with arguments no lock can be taken with.
	ErrInvalidArgument = errors.New("provider: invalid argument")
	// ErrServerRestarted is the cause (matched through a lease's ErrLockLost) of a lease lost
	// because its Redis server restarted or failed over, as its run_id showed.
	ErrServerRestarted = errors.New("provider: Redis server restarted or failed over")
	// ErrOutcomeUnknown: the connection to Redis failed after a command may have run, so
	// whether it did is unknown, and the provider could not find out: a release or releaseAll
	// may have deleted locks (it is never sent again, see docs/safety.md), an acquisition that
	// could not be given back may still hold keys. The error names the keys; check them with
	// operator.Inspector.Get before acting on them.
	ErrOutcomeUnknown = errors.New("provider: outcome unknown")
)

// errNoExpiryLease refuses a lease or Execute asked for NoExpiry.
var errNoExpiryLease = fmt.Errorf("%w: a lease always expires: NoExpiry is for Acquire only; give the lease an Expire (zero means %s)",
	ErrInvalidArgument, DefaultLeaseExpire)

// ConflictError is a lock conflict with the message stock Medusa gives for it (a MedusaError of
// type "conflict" on the Node side). errors.Is matches it against its sentinel and its cause.
//
// Every wait that ends without its keys (Acquire with AwaitQueue, AcquireLease, Execute) returns
// one, however it ends:
//   - the call's own timeout (AcquireLease, Execute): Kind ErrTimedOut, TimedOutMessage, Keys
//     all of the call's keys, sorted; it also matches context.DeadlineExceeded;
//   - ctx ended first (cancelled, its deadline, a cause of the caller's such as a shutdown):
//     Kind ErrNotAcquired, naming the key the call was trying; it also matches ctx's cause.
//
// When the call then cannot give back what it took, the error wraps that conflict (first in its
// chain, so errors.As finds it) and also matches ErrOutcomeUnknown, naming the keys that may
// still be held. An Acquire that does not wait fails with ErrNotAcquired on a held key; a Redis
// error (ctx ending during a call that does not wait included) is returned wrapped with the
// keys, never as a conflict.
type ConflictError struct {
	// Kind is ErrNotAcquired, ErrTimedOut or ErrLockLost.
	Kind error
	// Keys are the keys (without namespace) the conflict is about.
	Keys []string
	msg  string
	// cause is what ended a wait or a lease (a context's cause, a renewal's error), so errors.Is
	// also matches it.
	cause error
}

// Error returns the stock Medusa message, byte for byte.
func (e *ConflictError) Error() string { return e.msg }

// Unwrap lets errors.Is match the sentinel and, for a wait that was cut short or a lease that
// was lost, its cause (for example context.Canceled).
func (e *ConflictError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.cause}
}

// Type is Medusa's error type for every conflict: "conflict".
func (e *ConflictError) Type() string { return "conflict" }

// TimedOutMessage is stock Medusa's message for an execute that did not get its keys in time.
const TimedOutMessage = "Timed-out acquiring lock."

// LockLostMessage is stock Medusa's message for a lease that lost keys (without namespace,
// named in the order given, once each): `Lost the lock for key(s) "a", "b" while the job was
// still running: …`. A lease that a renewal found gone or taken carries it (Lease.Err); a holder
// that declares a lease lost by itself (a bridge client whose connection died) is given it in
// advance, so the message is composed here only. A loss whose cause the provider knows says
// that cause instead of stock's advice (see LossReason).
func LockLostMessage(keys []string) string {
	return lostPrefix(keys) + `the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`
}

// lostPrefix starts every lost-lease message: `Lost the lock for key(s) "a" while the job was still running: `.
func lostPrefix(keys []string) string {
	return "Lost the lock for key(s) " + quoteKeys(uniqueInOrder(keys)) + " while the job was still running: "
}

// errNoRenewal is the cause of a lease lost at its deadline while no renewal had failed yet:
// the one in flight got no answer in time.
var errNoRenewal = errors.New("no renewal was confirmed before the lease's deadline")

// LossReason says why a lease was lost, from err (Lease.Err) when the provider knows the cause:
// the Redis server restarted or failed over, or the lease reached its deadline because its
// renewals failed or got no answer. It returns "" when a renewal found a key gone, taken or
// replaced (stock's case, whose message is stock's; a read of the keys tells more).
func LossReason(err error) string {
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Kind != ErrLockLost || ce.cause == nil {
		return ""
	}
	var gone keyGoneError
	switch cause := ce.cause; {
	case errors.Is(cause, ErrRevoked):
		return "an operator force-released it (locktui); the holder is told first, and the key is freed once it is released"
	case errors.As(cause, &gone):
		return gone.Error()
	case errors.Is(cause, ErrServerRestarted):
		return "the Redis server restarted or failed over, which may have lost the keys"
	case errors.Is(cause, errNoRenewal), errors.Is(cause, context.DeadlineExceeded):
		return "the lease expired: no renewal was confirmed before its deadline (Redis could not be reached in time)"
	default:
		return "the lease expired because its renewals failed (last error: " + oneLine(cause.Error()) + ")"
	}
}

// oneLine folds s onto one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(strings.TrimSpace(s))
}

// notAcquired is stock's conflict for a key held by someone else.
func notAcquired(key string) *ConflictError {
	return &ConflictError{Kind: ErrNotAcquired, Keys: []string{key},
		msg: "Failed to acquire lock for key \"" + key + "\""}
}

// timedOut is stock's conflict for a wait that outlived its own timeout (keys: all the call's).
func timedOut(keys []string) *ConflictError {
	return &ConflictError{Kind: ErrTimedOut, Keys: keys, msg: TimedOutMessage, cause: context.DeadlineExceeded}
}

// lockLost is the conflict for a lease that lost keys, with cause (nil when a renewal found
// them gone or taken): stock's message, or with a known cause the reason LossReason gives.
func lockLost(keys []string, cause error) *ConflictError {
	ce := &ConflictError{Kind: ErrLockLost, Keys: keys, msg: LockLostMessage(keys), cause: cause}
	if reason := LossReason(ce); reason != "" {
		ce.msg = lostPrefix(keys) + reason + "."
	}
	return ce
}

// endedBy is the error of a wait that ended with err, where timeout is the cause its context
// got at the wait's own timeout. When err comes from that timeout (the conflict of the wait cut
// short by it, or timeout itself), the error is timeout; when err says more (a give-back that
// failed), timeout comes first and err follows. Any other err is returned as it is.
func endedBy(err error, timeout *ConflictError) error {
	if !errors.Is(err, timeout) {
		return err
	}
	if _, bare := err.(*ConflictError); bare {
		return timeout
	}
	return fmt.Errorf("%w; %w", timeout, err)
}

// quoteKeys renders keys as stock does: "a", "b".
func quoteKeys(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = `"` + k + `"`
	}
	return strings.Join(quoted, ", ")
}
