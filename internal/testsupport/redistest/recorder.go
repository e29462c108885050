package redistest

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Recorder is a go-redis hook (client.AddHook) that records the commands a client sends, in
// order, and the round trips they take: a pipeline is one round trip. It can also intercept them:
// a function set with BeforeSend may delay or fail a command before it is sent, and one set with
// AfterReply may replace the replies of a round trip with an error, as a reply lost on the way
// back would.
//
// The commands go-redis sends to set a connection up (HELLO, AUTH, SELECT and every CLIENT
// subcommand) are left out unless Handshake is set: what is recorded and intercepted is what the
// code under test asked for. The zero value is ready to use; set the fields before AddHook. The
// methods are safe for concurrent use.
type Recorder struct {
	// Handshake records and intercepts the connection set-up commands too.
	Handshake bool
	// CountOnly keeps no commands, only their counts (Count, Trips, Reset), and allocates
	// nothing per command: for benchmarks, whose figures kept commands would move. Calls then
	// returns nothing.
	CountOnly bool

	mu     sync.Mutex
	counts map[string]int // by command name
	total  int
	trips  int
	calls  []*Call
	before func(context.Context, redis.Cmder) error
	after  func(context.Context, redis.Cmder) error
}

// Call is one command a client sent.
type Call struct {
	// Cmd is the command. Its arguments may be read at once, its reply once Replied is set;
	// its error is Err (go-redis sets the command's own after the hooks).
	Cmd redis.Cmder
	// Trip numbers the round trip that carried the command, from 1 (counting from the last
	// Reset): the commands of one pipeline share it.
	Trip int
	// Sent is when the round trip was handed on to be sent; Replied when it returned, zero while
	// it is in flight.
	Sent, Replied time.Time
	// Err is the command's error as its round trip returned it (a reply error, redis.Nil, a
	// network error), before AfterReply; nil for a reply.
	Err error
}

// Name returns the command's name in lower case, e.g. "evalsha".
func (c Call) Name() string { return c.Cmd.Name() }

// BeforeSend has f asked about each command before its round trip is sent (nil: nothing is
// asked). f may block, to delay the command, honouring ctx; a non-nil error fails every command
// of the round trip with it, and none of them is sent or recorded, as with a broken connection.
func (r *Recorder) BeforeSend(f func(ctx context.Context, cmd redis.Cmder) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.before = f
}

// AfterReply has f asked about each command once its round trip returned (nil: nothing is
// asked); a non-nil error replaces the replies of every command of the round trip, as a reply
// lost on the way back would (Call.Err keeps what Redis answered).
func (r *Recorder) AfterReply(f func(ctx context.Context, cmd redis.Cmder) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.after = f
}

// Calls returns the commands sent since the last Reset, oldest first.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Call, len(r.calls))
	for i, c := range r.calls {
		out[i] = *c
	}
	return out
}

// Count returns how many commands named name (lower case, e.g. "scan") were sent since the last
// Reset.
func (r *Recorder) Count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// Trips returns the round trips since the last Reset.
func (r *Recorder) Trips() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trips
}

// Reset returns the commands and round trips since the last Reset and starts again from zero,
// forgetting the calls.
func (r *Recorder) Reset() (cmds, trips int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmds, trips = r.total, r.trips
	r.counts, r.total, r.trips, r.calls = nil, 0, 0, nil
	return cmds, trips
}

// DialHook passes dials through.
func (r *Recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a single command as a round trip of its own.
func (r *Recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !r.records(cmd) {
			return next(ctx, cmd)
		}
		cmds := [1]redis.Cmder{cmd}
		return r.roundTrip(ctx, cmds[:], true, func(ctx context.Context) error { return next(ctx, cmd) })
	}
}

// ProcessPipelineHook records the commands of a pipeline as one round trip.
func (r *Recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return r.roundTrip(ctx, cmds, false, func(ctx context.Context) error { return next(ctx, cmds) })
	}
}

// records reports whether cmd is recorded: it is not a connection set-up command, or Handshake
// is set.
func (r *Recorder) records(cmd redis.Cmder) bool {
	if r.Handshake {
		return true
	}
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return false
	}
	return true
}

// roundTrip asks BeforeSend, records the commands of cmds that it records, sends them all,
// notes their errors and asks AfterReply. single says cmds is one command sent alone: its error
// is what send returns (go-redis sets it on the command only after the hooks).
func (r *Recorder) roundTrip(ctx context.Context, cmds []redis.Cmder, single bool, send func(context.Context) error) error {
	r.mu.Lock()
	before, after := r.before, r.after
	r.mu.Unlock()
	if err := r.ask(ctx, before, cmds); err != nil {
		return err // unsent
	}
	kept := r.sent(cmds)
	err := send(ctx)
	r.replied(kept, single, err)
	if lost := r.ask(ctx, after, cmds); lost != nil {
		return lost
	}
	return err
}

// ask asks f (if set) about each command of cmds that r records, and fails them all with the
// first error it returns.
func (r *Recorder) ask(ctx context.Context, f func(context.Context, redis.Cmder) error, cmds []redis.Cmder) error {
	if f == nil {
		return nil
	}
	for _, cmd := range cmds {
		if !r.records(cmd) {
			continue
		}
		if err := f(ctx, cmd); err != nil {
			setErr(cmds, err)
			return err
		}
	}
	return nil
}

// sent counts the commands of cmds it records, as one round trip, and returns them as kept
// calls (none with CountOnly).
func (r *Recorder) sent(cmds []redis.Cmder) (kept []*Call) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	trip := r.trips + 1
	for _, cmd := range cmds {
		if !r.records(cmd) {
			continue
		}
		if r.counts == nil {
			r.counts = map[string]int{}
		}
		r.counts[cmd.Name()]++
		r.total++
		r.trips = trip
		if !r.CountOnly {
			kept = append(kept, &Call{Cmd: cmd, Trip: trip, Sent: now})
		}
	}
	r.calls = append(r.calls, kept...)
	return kept
}

// replied notes the errors of the kept calls of a round trip that returned err. (After a Reset
// they are no longer among the calls: noting them changes nothing.)
func (r *Recorder) replied(kept []*Call, single bool, err error) {
	if len(kept) == 0 {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range kept {
		c.Replied, c.Err = now, c.Cmd.Err()
		if single {
			c.Err = err
		}
	}
}

// setErr fails every command of cmds with err.
func setErr(cmds []redis.Cmder, err error) {
	for _, cmd := range cmds {
		cmd.SetErr(err)
	}
}
