package bridge

import (
	"sync"
	"time"
)

// workerIdle is how long a request goroutine waits for the connection's next request before it
// ends.
const workerIdle = time.Second

// workers runs a connection's requests on goroutines that outlive one request: a request's
// goroutine grows its stack deep into the provider and go-redis, and a fresh goroutine per
// request paid for that growth every time (runtime.copystack took about 14 % of the bridge's CPU
// under `make bench`). A request goes to an idle goroutine when there is one, else to a new one;
// a goroutine idle for workerIdle, or once done is closed, ends. There are never more goroutines
// than requests that ran at once.
type workers struct {
	jobs chan func()     // unbuffered: a send succeeds only when a goroutine is idle
	done <-chan struct{} // closed when the connection ends
	wg   sync.WaitGroup
}

func newWorkers(done <-chan struct{}) *workers {
	return &workers{jobs: make(chan func()), done: done}
}

// run runs f on an idle goroutine or a new one.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		w.wg.Go(func() { w.loop(f) })
	}
}

func (w *workers) loop(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-w.jobs:
		case <-idle.C:
			return
		case <-w.done:
			return
		}
	}
}

// wait returns once every goroutine has ended (after done is closed).
func (w *workers) wait() { w.wg.Wait() }
