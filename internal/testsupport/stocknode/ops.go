package stocknode

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// AcquireArgs are the options of stock acquire. Zero fields are left out of the call, so stock
// applies its own defaults (owner "*", no expiry, no queueing).
type AcquireArgs struct {
	// OwnerID is ownerId; "" leaves it out (stock then uses "*").
	OwnerID string
	// Expire is expire in seconds; 0 leaves it out (stock then sets no TTL).
	Expire float64
	// AwaitQueue is awaitQueue: poll until the keys are free, with no deadline.
	AwaitQueue bool
}

func (a AcquireArgs) options() map[string]any {
	o := map[string]any{}
	if a.OwnerID != "" {
		o["ownerId"] = a.OwnerID
	}
	if a.Expire != 0 {
		o["expire"] = a.Expire
	}
	if a.AwaitQueue {
		o["awaitQueue"] = true
	}
	return o
}

// ownerOptions is {ownerId} for a named owner and {} for "" (stock's "*").
func ownerOptions(owner string) map[string]any {
	if owner == "" {
		return map[string]any{}
	}
	return map[string]any{"ownerId": owner}
}

// Acquire calls stock acquire(keys, args).
func (d *Driver) Acquire(ctx context.Context, keys []string, args AcquireArgs) error {
	return d.Call(ctx, "acquire", map[string]any{"keys": keys, "options": args.options()}, nil)
}

// Release calls stock release(keys, {ownerId}) ("" leaves the owner out: "*").
func (d *Driver) Release(ctx context.Context, keys []string, owner string) (bool, error) {
	var ok bool
	err := d.Call(ctx, "release", map[string]any{"keys": keys, "options": ownerOptions(owner)}, &ok)
	return ok, err
}

// ReleaseAll calls stock releaseAll({ownerId}) ("" leaves the owner out: only "*" locks go).
func (d *Driver) ReleaseAll(ctx context.Context, owner string) error {
	return d.Call(ctx, "releaseAll", map[string]any{"options": ownerOptions(owner)}, nil)
}

// ExecuteArgs are the options of stock execute; zero fields are left out (stock defaults:
// timeout = waitLockingTimeout, expire 60).
type ExecuteArgs struct {
	// Timeout is the acquisition timeout in seconds.
	Timeout float64
	// Expire is the lease in seconds.
	Expire float64
}

func (a ExecuteArgs) options() map[string]any {
	o := map[string]any{}
	if a.Timeout != 0 {
		o["timeout"] = a.Timeout
	}
	if a.Expire != 0 {
		o["expire"] = a.Expire
	}
	return o
}

// Job is the job a stock execute runs; build one with ValueJob, HoldJob or BuyJob.
type Job struct {
	// Kind is "value", "hold" or "buy".
	Kind string `json:"kind"`
	// Name identifies a hold job for Finish and Throw.
	Name string `json:"name,omitempty"`
	// Value is what a value job returns.
	Value any `json:"value,omitempty"`
	// StockKey, ActiveKey, OverlapKey and WorkMs configure a buy job (see Counter).
	StockKey   string `json:"stockKey,omitempty"`
	ActiveKey  string `json:"activeKey,omitempty"`
	OverlapKey string `json:"overlapKey,omitempty"`
	WorkMs     int64  `json:"workMs,omitempty"`
}

// ValueJob returns v at once.
func ValueJob(v any) Job { return Job{Kind: "value", Value: v} }

// HoldJob runs until Execution.Finish or Execution.Throw; it reports its start and the abort of
// its signal. name must be unique among the driver's executes in flight.
func HoldJob(name string) Job { return Job{Kind: "hold", Name: name} }

// Counter names the Redis keys of a "buy": the stock counter, the number of buys running
// right now, and the number of buys that found another one running (overlaps).
type Counter struct {
	// StockKey holds the stock, an integer; ActiveKey and OverlapKey are counters the buys
	// maintain (start them absent or at 0).
	StockKey, ActiveKey, OverlapKey string
	// Work is how long a buy takes between reading and writing the stock.
	Work time.Duration
}

// BuyJob is the "buy" of Medusa's locking test: if the stock is positive, wait c.Work and
// write stock-1. It counts overlapping buys into c.OverlapKey. It returns BuyResult.
func BuyJob(c Counter) Job {
	return Job{Kind: "buy", StockKey: c.StockKey, ActiveKey: c.ActiveKey, OverlapKey: c.OverlapKey,
		WorkMs: c.Work.Milliseconds()}
}

// BuyResult is the result of a BuyJob.
type BuyResult struct {
	Bought  bool `json:"bought"`
	Aborted bool `json:"aborted"`
}

// HoldResult is the result of a HoldJob that was finished without an error.
type HoldResult struct {
	Aborted bool            `json:"aborted"`
	Value   json.RawMessage `json:"value"`
}

// Execute calls stock execute(keys, job, args) and waits for it; the result is the job's
// return value as JSON.
func (d *Driver) Execute(ctx context.Context, keys []string, job Job, args ExecuteArgs) (json.RawMessage, error) {
	e, err := d.ExecuteAsync(keys, job, args)
	if err != nil {
		return nil, err
	}
	return e.Wait(ctx)
}

// Execution is a stock execute in flight.
type Execution struct {
	d    *Driver
	id   int64
	name string // hold job name, or ""

	mu          sync.Mutex
	started     chan struct{}
	aborted     chan struct{}
	abortReason *Error
	done        chan struct{}
	result      json.RawMessage
	err         error
}

// ExecuteAsync starts stock execute(keys, job, args) and returns at once.
func (d *Driver) ExecuteAsync(keys []string, job Job, args ExecuteArgs) (*Execution, error) {
	e := &Execution{d: d, started: make(chan struct{}), aborted: make(chan struct{}), done: make(chan struct{})}
	if job.Kind == "hold" {
		e.name = job.Name
	}
	req := map[string]any{"keys": keys, "job": job, "options": args.options()}
	if _, err := d.send("execute", req, e.settle, e); err != nil {
		return nil, err
	}
	return e, nil
}

// settle records execute's reply (called once, from the reader).
func (e *Execution) settle(r reply) {
	e.d.mu.Lock()
	delete(e.d.execs, e.id)
	e.d.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.result, e.err = r.Result, decode("execute", r, nil)
	close(e.done)
}

// onEvent records a job event (called from the reader).
func (e *Execution) onEvent(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Event {
	case "job_started":
		closeOnce(e.started)
	case "job_aborted":
		if e.abortReason == nil {
			e.abortReason = ev.Reason
			closeOnce(e.aborted)
		}
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Started waits until the hold job runs. If execute ends first (for example "Timed-out
// acquiring lock."), it returns execute's error, or an error saying the job never started.
func (e *Execution) Started(ctx context.Context) error {
	select {
	case <-e.started:
		return nil
	case <-e.done:
		select {
		case <-e.started:
			return nil
		default:
		}
		if _, err := e.Wait(ctx); err != nil {
			return err
		}
		return fmt.Errorf("stocknode: execute %d ended without starting its job", e.id)
	case <-ctx.Done():
		return fmt.Errorf("stocknode: waiting for job %q to start: %w", e.name, ctx.Err())
	}
}

// HasStarted reports whether the hold job has started.
func (e *Execution) HasStarted() bool {
	select {
	case <-e.started:
		return true
	default:
		return false
	}
}

// Aborted waits until the job's AbortSignal fires (stock: the lease was lost) and returns its
// reason, the MedusaError execute will throw.
func (e *Execution) Aborted(ctx context.Context) (*Error, error) {
	select {
	case <-e.aborted:
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.abortReason, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("stocknode: waiting for the signal of job %q to abort: %w", e.name, ctx.Err())
	}
}

// Finish lets the hold job return normally.
func (e *Execution) Finish(ctx context.Context) error {
	return e.d.Call(ctx, "finish", map[string]any{"name": e.name}, nil)
}

// Throw makes the hold job throw an Error with message.
func (e *Execution) Throw(ctx context.Context, message string) error {
	return e.d.Call(ctx, "finish", map[string]any{"name": e.name, "throw": message}, nil)
}

// Done is closed when execute has settled.
func (e *Execution) Done() <-chan struct{} { return e.done }

// Wait waits for execute to settle and returns the job's result as JSON, or execute's error
// (an *Error for anything stock threw).
func (e *Execution) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-e.done:
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.result, e.err
	case <-ctx.Done():
		return nil, fmt.Errorf("stocknode: waiting for execute %d: %w", e.id, ctx.Err())
	}
}
