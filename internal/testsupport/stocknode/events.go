package stocknode

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Error is an error thrown by the stock provider (or the driver), as the driver reports it.
type Error struct {
	// Type is MedusaError's type ("conflict") or, for other errors, their name ("ReplyError").
	Type string `json:"type"`
	// Message is the error message, byte for byte.
	Message string `json:"message"`
	// Name is the JS error's name ("Error" for a MedusaError).
	Name string `json:"name"`
	// Medusa is true for a MedusaError.
	Medusa bool `json:"medusa"`
}

// Error returns the stock message unchanged, so it compares with the Go provider's messages.
func (e *Error) Error() string { return e.Message }

// Event is a notice the driver sends outside the request/reply flow. It is not a lock event
// (provider.Event, whose wire form is events.Event): it reports what the stock Node process did,
// in the driver's own terms (its log lines, its jobs, the scripts it ran with their replies), so
// tests can compare stock's behaviour with the Go provider's; stock Medusa emits no lock events.
type Event struct {
	// Event is ready, log, job_started, job_aborted, job_finished, script or
	// unhandled_rejection.
	Event string `json:"event"`
	// ID is the execute request of a job_* event.
	ID int64 `json:"id"`
	// Name is the hold job of a job_* event, or the script of a script event
	// (acquireLock, extendLock, releaseLock).
	Name string `json:"name"`
	// Aborted says whether the job's AbortSignal had fired (job_* events).
	Aborted bool `json:"aborted"`
	// Reason is the signal's abort reason (job_aborted).
	Reason *Error `json:"reason"`
	// Key is the full Redis key of a script call; Args its other arguments; Result its reply.
	Key    string   `json:"key"`
	Args   []string `json:"args"`
	Result int64    `json:"result"`
	// Level and Message are a stock log line (log events).
	Level   string `json:"level"`
	Message string `json:"message"`
	// Error is an unhandled rejection of the stock provider (unhandled_rejection).
	Error *Error `json:"error"`

	raw json.RawMessage
}

// watcher delivers the first event matching pred to ch.
type watcher struct {
	pred func(Event) bool
	ch   chan Event
}

// watch registers a one-shot watcher; the channel receives the first later matching event.
func (d *Driver) watch(pred func(Event) bool) <-chan Event {
	w := &watcher{pred: pred, ch: make(chan Event, 1)}
	d.mu.Lock()
	d.watchers = append(d.watchers, w)
	d.mu.Unlock()
	return w.ch
}

// WatchScript returns a channel that receives the next script call (driver started with
// Options.Trace) on redisKey whose name and result match; name "" matches any script. Register
// before causing the call.
func (d *Driver) WatchScript(name, redisKey string, result int64) <-chan Event {
	return d.watch(func(e Event) bool {
		return e.Event == "script" && (name == "" || e.Name == name) && e.Key == redisKey && e.Result == result
	})
}

// AwaitEvent waits for ch (from WatchScript) or fails with ctx's error or ErrExited.
func (d *Driver) AwaitEvent(ctx context.Context, ch <-chan Event) (Event, error) {
	select {
	case e := <-ch:
		return e, nil
	case <-d.exited:
		return Event{}, fmt.Errorf("%w: %s", ErrExited, d.stderr.Last(2000))
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Logs returns the log events of the stock provider so far (its logger writes info, warn and
// error lines; 2.21.2 warns when a lease is lost or cannot be renewed).
func (d *Driver) Logs() []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.logs)
}

// ScriptCalls returns the script calls on redisKey so far, oldest first (driver started with
// Options.Trace).
func (d *Driver) ScriptCalls(redisKey string) []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Event
	for _, e := range d.scripts {
		if e.Key == redisKey {
			out = append(out, e)
		}
	}
	return out
}

// event routes one event line to the log, the executions and the watchers.
func (d *Driver) event(line []byte) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		_, _ = d.stderr.Write([]byte("stocknode: unreadable driver event: " + string(line) + "\n"))
		return
	}
	e.raw = slices.Clone(line)
	d.mu.Lock()
	switch e.Event {
	case "log", "unhandled_rejection":
		d.logs = append(d.logs, e)
	case "script":
		d.scripts = append(d.scripts, e)
	}
	exec := d.execs[e.ID]
	var matched []*watcher
	kept := d.watchers[:0]
	for _, w := range d.watchers {
		if w.pred(e) {
			matched = append(matched, w)
		} else {
			kept = append(kept, w)
		}
	}
	d.watchers = kept
	d.mu.Unlock()
	for _, w := range matched {
		w.ch <- e // buffered and used once: never blocks
	}
	if exec != nil && exec.name == e.Name {
		exec.onEvent(e)
	}
}
