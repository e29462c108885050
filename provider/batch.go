package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batcher bounds: the commands of one merged pipeline (a call with more goes alone), and the
// pipelines in flight at once.
const (
	maxBatchCmds     = 256
	maxBatchInFlight = 4
)

// errNotSent marks a call that left the batcher's queue before its commands were sent: nothing
// ran, so there is nothing to undo (see maybeRan).
var errNotSent = errors.New("provider: the request was never sent")

// batcher merges the script runs of concurrent calls of one Provider into shared pipelines
// (auto-pipelining): go-redis sends each pipeline as one write and reads its replies in one go,
// so many concurrent calls cost Redis and the client a fraction of the system calls and
// connection hand-offs that one pipeline per call costs. Stock Medusa's ioredis gets the same
// effect from its single connection; go-redis has no such batching of its own for pipelines.
//
// Up to maxBatchInFlight pipelines are in flight at once: a call that finds fewer runs its own
// at once (a lone caller pays nothing but a mutex), and calls that arrive while all are in
// flight queue and go out together, in the order they came, as the next pipeline, run by the
// first of them as soon as one in flight is answered. More than one in flight keeps one
// stalled command (a slow link, a paused server) from holding up every other call at once,
// as separate pooled connections did before. A pipeline holds at most maxBatchCmds commands
// and only calls of one resend kind: go-redis resends a whole pipeline or none of it, and a
// delete that must never be resent (sendOnce) must not keep the scripts that may be resent
// from being so.
//
// A call whose context ends while queued leaves the queue (its error matches errNotSent: nothing
// ran); one whose context ends while its pipeline is in flight returns the context's error at
// once, as go-redis cutting the I/O short does, and its outcome is unknown (maybeRan): the
// error is an inFlightError, whose undo waits for that pipeline. A pipeline of one call runs
// with that call's context, exactly as without the batcher; a merged
// one runs with none of the callers' cancellations (one caller giving up must not fail the
// others) and the latest of their deadlines, if every one has a deadline (else only the
// client's read and write timeouts bound it).
//
// No goroutine is started; the zero value is ready to use.
type batcher struct {
	mu     sync.Mutex
	queue  []*batchCall // calls waiting for a pipeline in flight to be answered
	flying int          // pipelines in flight (or being handed to their runners)
}

// inFlightError is the error of a call whose context ended while its commands were in another
// call's pipeline: they may still run, later than anything the caller sends next on another
// connection. done is closed once they have run (or failed); whatever undoes them (a give-back)
// waits for it first, or it could reach Redis before the commands it undoes.
type inFlightError struct {
	err  error
	done <-chan struct{}
}

func (e *inFlightError) Error() string { return e.err.Error() }
func (e *inFlightError) Unwrap() error { return e.err }

// batchCall is one call's commands, all in the same pipeline.
type batchCall struct {
	ctx  context.Context
	cmds []redis.Cmder
	once bool // sendOnce: go-redis must not resend the pipeline
	// wake is signalled when the call's pipeline was answered, or when the call must run
	// the next pipeline (lead then holds it). Buffered: the signaller never blocks. wake and
	// done are nil for a call that ran its own pipeline at once.
	wake chan struct{}
	sent bool          // guarded by batcher.mu: taken into a pipeline
	lead []*batchCall  // guarded by batcher.mu: the pipeline this call runs
	done chan struct{} // closed once the call's pipeline was answered
}

// exec runs cmds in a pipeline, merged with the concurrent calls of the Provider (see batcher).
// With a nil error each command holds its own reply or error, as after Pipeline.Exec; with an
// error the call ended before its reply came (its context ended) and cmds must not be read.
func (b *batcher) exec(ctx context.Context, client redis.UniversalClient, cmds []redis.Cmder, once bool) error {
	c := &batchCall{ctx: ctx, cmds: cmds, once: once}
	b.mu.Lock()
	if b.flying < maxBatchInFlight {
		b.flying++
		c.sent = true
		b.mu.Unlock()
		b.run(client, []*batchCall{c}) // nobody waits for c: it needs no channels
		return nil
	}
	c.wake, c.done = make(chan struct{}, 1), make(chan struct{})
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.wake:
	case <-ctx.Done():
		b.mu.Lock()
		switch {
		case !c.sent:
			b.queue = slices.DeleteFunc(b.queue, func(q *batchCall) bool { return q == c })
			b.mu.Unlock()
			return fmt.Errorf("%w: %w", errNotSent, ctx.Err())
		case c.lead == nil:
			b.mu.Unlock()
			// In another call's pipeline, which may not even be written yet: the outcome is
			// unknown, and an undo must wait for it (see inFlightError).
			return &inFlightError{err: ctx.Err(), done: c.done}
		}
		b.mu.Unlock()
		<-c.wake // the pipeline is handed to this call: it runs it for everyone in it
	}
	b.mu.Lock()
	lead := c.lead
	b.mu.Unlock()
	if lead != nil {
		b.run(client, lead)
	}
	<-c.done
	return nil
}

// run sends one pipeline of calls, completes them and hands the next pipeline, if calls are
// queued, to the first of them.
func (b *batcher) run(client redis.UniversalClient, calls []*batchCall) {
	ctx, cancel := batchContext(calls)
	pipe := client.Pipeline()
	for _, c := range calls {
		for _, cmd := range c.cmds {
			_ = pipe.Process(ctx, cmd)
		}
	}
	_, _ = pipe.Exec(ctx)
	cancel()
	for _, c := range calls {
		if c.done != nil {
			close(c.done)
			c.wake <- struct{}{}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.flying--
		return
	}
	next := b.take()
	next[0].lead = next
	next[0].wake <- struct{}{}
}

// take removes the next pipeline's calls from the head of the queue: calls of the head's resend
// kind, in order, up to maxBatchCmds commands (at least one call). b.mu is held.
func (b *batcher) take() []*batchCall {
	n, cmds := 0, 0
	for n < len(b.queue) && b.queue[n].once == b.queue[0].once &&
		(n == 0 || cmds+len(b.queue[n].cmds) <= maxBatchCmds) {
		cmds += len(b.queue[n].cmds)
		n++
	}
	calls := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	for _, c := range calls {
		c.sent = true
	}
	return calls
}

// batchContext is the context a pipeline of calls runs with (see batcher).
func batchContext(calls []*batchCall) (context.Context, context.CancelFunc) {
	if len(calls) == 1 {
		return calls[0].ctx, func() {}
	}
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(calls[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(calls[0].ctx), latest)
}
