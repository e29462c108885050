package provider

import (
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
	// Get before acting on them.
	ErrOutcomeUnknown = errors.New("provider: outcome unknown")
)

// ConflictError is a lock conflict with the message stock Medusa gives for it (a MedusaError of
// type "conflict" on the Node side). errors.Is matches it against its sentinel.
type ConflictError struct {
	// Kind is ErrNotAcquired, ErrTimedOut or ErrLockLost.
	Kind error
	// Keys are the keys (without namespace) the conflict is about.
	Keys []string
	msg  string
	// cause is what ended a wait (a context error), so errors.Is also matches it.
	cause error
}

// Error returns the stock Medusa message, byte for byte.
func (e *ConflictError) Error() string { return e.msg }

// Unwrap lets errors.Is match the sentinel and, for a wait that was cut short, its cause (for
// example context.Canceled).
func (e *ConflictError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.cause}
}

// Type is Medusa's error type for every conflict: "conflict".
func (e *ConflictError) Type() string { return "conflict" }

func notAcquired(key string) *ConflictError {
	return &ConflictError{Kind: ErrNotAcquired, Keys: []string{key},
		msg: "Failed to acquire lock for key \"" + key + "\""}
}

func timedOut(keys []string) *ConflictError {
	return &ConflictError{Kind: ErrTimedOut, Keys: keys, msg: "Timed-out acquiring lock."}
}

func lockLost(keys []string) *ConflictError {
	return &ConflictError{Kind: ErrLockLost, Keys: keys, msg: fmt.Sprintf(
		"Lost the lock for key(s) %s while the job was still running: the lease expired before it could be renewed. Increase \"expire\" if the job is expected to run this long.",
		quoteKeys(keys))}
}

// quoteKeys renders keys as stock does: "a", "b".
func quoteKeys(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = `"` + k + `"`
	}
	return strings.Join(quoted, ", ")
}
