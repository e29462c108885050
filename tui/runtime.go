package tui

import (
	"context"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/locktui/locktui/internal/sleep"
)

// shutdownGrace bounds how long shutdown waits for the reads in flight. go-redis ends I/O at
// deadlines, not on cancellation, so a read sent to a Redis that accepts connections but never
// answers would otherwise hold the console open until its deadline (seconds, or never without
// a read timeout). A read left behind ends at its own deadline and can no longer reach the
// screen.
const shutdownGrace = time.Second

// runtime owns the console's background work: the context every command runs in, the count
// of commands in flight, and what must be closed at the end, so Run returns when nothing it
// started is left running, or, for reads stuck on a stalled Redis, after shutdownGrace.
type runtime struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	reads     sync.WaitGroup // commands that may be left behind after shutdownGrace
	mutations sync.WaitGroup // releases and their audit writes: always waited for
	closers   []func()
}

func newRuntime(parent context.Context) *runtime {
	ctx, cancel := context.WithCancel(parent)
	return &runtime{ctx: ctx, cancel: cancel}
}

// cmd wraps fn as a tea.Cmd that runs in the runtime's context and is waited for at shutdown
// (up to shutdownGrace); after shutdown it does nothing.
func (r *runtime) cmd(fn func(ctx context.Context) tea.Msg) tea.Cmd {
	return r.track(&r.reads, fn)
}

// mutation is cmd for a release and its audit write: shutdown waits for it to end, so the
// audit record of a release under way is never lost. A single release has a deadline of its own
// (mutationTimeout); a release of an owner's locks ends when the runtime's context does.
func (r *runtime) mutation(fn func(ctx context.Context) tea.Msg) tea.Cmd {
	return r.track(&r.mutations, fn)
}

func (r *runtime) track(wg *sync.WaitGroup, fn func(ctx context.Context) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil
		}
		wg.Add(1)
		r.mu.Unlock()
		defer wg.Done()
		return fn(r.ctx)
	}
}

// after returns a tea.Cmd that delivers msg after d, or nothing when the runtime ends first
// (unlike tea.Tick, whose goroutine would outlive the program).
func (r *runtime) after(d time.Duration, msg tea.Msg) tea.Cmd {
	return r.cmd(func(ctx context.Context) tea.Msg {
		if !sleep.For(ctx, d) {
			return nil
		}
		return msg
	})
}

// goroutine runs fn in the background like cmd, for work that is not a tea.Cmd.
func (r *runtime) goroutine(fn func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.reads.Add(1)
	go func() {
		defer r.reads.Done()
		fn(r.ctx)
	}()
}

// onClose registers fn to run at shutdown, after the commands in flight ended (or, for reads,
// were left behind after shutdownGrace). If the runtime is already shut down, fn runs now.
func (r *runtime) onClose(fn func()) {
	r.mu.Lock()
	if !r.closed {
		r.closers = append(r.closers, fn)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	fn()
}

// shutdown cancels the context (which also closes the PubSubs still waiting for a
// subscription's confirmation), waits for the mutations in flight and, up to shutdownGrace,
// for the reads, and runs the closers. It is safe to call more than once.
func (r *runtime) shutdown() {
	r.cancel()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	r.mutations.Wait()
	readsDone := make(chan struct{})
	go func() {
		r.reads.Wait()
		close(readsDone)
	}()
	t := time.NewTimer(shutdownGrace)
	defer t.Stop()
	select {
	case <-readsDone:
	case <-t.C:
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}
