package cli

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// maxQueuedLines bounds the lines a lineQueue holds for a writer that does not keep up.
const maxQueuedLines = 256

// stderrFlush bounds how long run waits, as it returns, for its queued lines to be written.
const stderrFlush = 2 * time.Second

// lineQueue is an io.Writer that never blocks its callers: one goroutine writes on what they
// wrote, in order, and while maxQueuedLines wait it drops writes and later says how many. run's
// own lines and the provider's warnings go through it, so that a stderr nobody reads (a full
// pipe, a blocked log driver) can delay neither a signal to the command nor a renewal. (A
// channel and a goroutine: no library offers a bounded, dropping io.Writer.)
type lineQueue struct {
	w     io.Writer
	lines chan []byte
	done  chan struct{} // closed when the writer goroutine has written everything

	mu      sync.Mutex
	closed  bool
	dropped int
}

// newLineQueue starts the goroutine that writes to w; Close ends it.
func newLineQueue(w io.Writer) *lineQueue {
	q := &lineQueue{w: w, lines: make(chan []byte, maxQueuedLines), done: make(chan struct{})}
	go q.pump()
	return q
}

// Write queues a copy of p, or drops it when the queue is full or closed; it never fails.
func (q *lineQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.dropped++
		return len(p), nil
	}
	select {
	case q.lines <- bytes.Clone(p):
	default:
		q.dropped++
	}
	return len(p), nil
}

// Close stops taking lines and waits up to bound for the queued ones to be written.
func (q *lineQueue) Close(bound time.Duration) {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.lines)
	}
	q.mu.Unlock()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-q.done:
	case <-t.C:
	}
}

// pump writes the queued lines, each after a note of the lines dropped before it, if any.
func (q *lineQueue) pump() {
	defer close(q.done)
	for line := range q.lines {
		q.noteDropped()
		_, _ = q.w.Write(line)
	}
	q.noteDropped()
}

// noteDropped writes how many lines were dropped since the last note, if any.
func (q *lineQueue) noteDropped() {
	q.mu.Lock()
	n := q.dropped
	q.dropped = 0
	q.mu.Unlock()
	if n > 0 {
		fmt.Fprintf(q.w, "locktui: warning: %d lines of locktui's messages were dropped: stderr was not read in time\n", n)
	}
}
