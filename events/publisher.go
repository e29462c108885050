package events

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
)

// Publisher defaults.
const (
	// DefaultBuffer is the number of events a Publisher holds while Redis is slow.
	DefaultBuffer = 1024
	// DefaultBatch is the largest number of PUBLISH commands sent in one pipeline.
	DefaultBatch = 64
	// DefaultPublishTimeout bounds one pipeline of PUBLISH commands.
	DefaultPublishTimeout = 2 * time.Second
)

// PublisherOptions tune a Publisher. A nil *PublisherOptions gives the defaults.
type PublisherOptions struct {
	// Buffer is the capacity of the queue between the provider and Redis; an event that finds
	// it full is dropped and counted (Dropped). Default DefaultBuffer (1024).
	Buffer int
	// Batch is the largest number of events published in one pipeline. Default DefaultBatch (64).
	Batch int
	// Timeout bounds one pipeline. Default DefaultPublishTimeout (2 s).
	Timeout time.Duration
	// IncludeRenewed publishes "renewed" events too. Default false: every lease renews each of
	// its keys every max(expire/3, 250 ms), which for a busy service is most of the traffic and
	// changes nothing the console shows (it reads TTLs from Redis). The demo turns it on.
	IncludeRenewed bool
	// Host is the "host" of every event. Default os.Hostname().
	Host string
	// Logger, when set, is told when publishing starts failing and when it recovers (once per
	// change, not per event). Default: no logging, since a console owns the terminal; read
	// Err, Failed and Dropped instead.
	Logger *slog.Logger
}

// Publisher publishes the lock events of a provider on the namespace's channel. It implements
// provider.Observer: LockEvent never blocks; events go through a bounded queue to one goroutine
// that publishes them in pipelined batches. Nothing is retried: an event that cannot be queued
// is counted by Dropped, one Redis refused by Failed. Close stops the goroutine.
type Publisher struct {
	client         redis.UniversalClient
	channel        string
	source         string
	host           string
	pid            int
	batch          int
	timeout        time.Duration
	includeRenewed bool
	logger         *slog.Logger

	queue chan Event
	stop  chan struct{}
	done  chan struct{}

	// runCtx bounds every pipeline; Close cancels it when its own context ends.
	runCtx    context.Context
	cancelRun context.CancelFunc

	mu     sync.RWMutex // guards closed against LockEvent's sends
	closed bool

	closeOnce sync.Once
	closeErr  error

	published atomic.Uint64
	dropped   atomic.Uint64
	failed    atomic.Uint64
	lastErr   atomic.Pointer[error]
}

// NewPublisher starts a Publisher of namespace's events (channel ChannelFor(namespace)),
// stamped with source (SourceGo, SourceBridge, SourceCLI, SourceDemo). opts may be nil. The
// caller keeps ownership of client and must Close the Publisher before closing the client.
func NewPublisher(client redis.UniversalClient, namespace, source string, opts *PublisherOptions) *Publisher {
	var o PublisherOptions
	if opts != nil {
		o = *opts
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultPublishTimeout
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	p := &Publisher{
		client:         client,
		channel:        ChannelFor(namespace),
		source:         source,
		host:           o.Host,
		pid:            os.Getpid(),
		batch:          o.Batch,
		timeout:        o.Timeout,
		includeRenewed: o.IncludeRenewed,
		logger:         o.Logger,
		queue:          make(chan Event, o.Buffer),
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
	}
	p.runCtx, p.cancelRun = context.WithCancel(context.Background())
	go p.run()
	return p
}

// Channel returns the pub/sub channel the Publisher writes to.
func (p *Publisher) Channel() string { return p.channel }

// LockEvent queues e for publishing without blocking. It drops (and counts) the event when the
// queue is full or the Publisher is closed, and skips "renewed" events unless IncludeRenewed.
func (p *Publisher) LockEvent(e provider.Event) {
	if e.Kind == provider.EventRenewed && !p.includeRenewed {
		return
	}
	ev := fromProvider(e, p.source, p.host, p.pid)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.dropped.Add(1)
		return
	}
	select {
	case p.queue <- ev:
	default:
		p.dropped.Add(1)
	}
}

// Published returns how many events Redis accepted.
func (p *Publisher) Published() uint64 { return p.published.Load() }

// Dropped returns how many events were dropped because the queue was full or the Publisher
// was closed.
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Failed returns how many queued events Redis did not accept (connection errors, timeouts).
func (p *Publisher) Failed() uint64 { return p.failed.Load() }

// Err returns the error of the last failed pipeline, or nil once a later one succeeded.
func (p *Publisher) Err() error {
	if e := p.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Close stops accepting events, publishes what is queued and stops the goroutine. When ctx
// ends first the rest is abandoned (and counted by Failed). It returns an error saying how many
// queued events were not published, or nil. Calling it again returns the first result.
func (p *Publisher) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		failedBefore := p.failed.Load()
		stopAfter := context.AfterFunc(ctx, p.cancelRun)
		close(p.stop)
		<-p.done // bounded: every pipeline has a deadline and ends early once runCtx is cancelled
		stopAfter()
		p.cancelRun()
		if lost := p.failed.Load() - failedBefore; lost > 0 {
			cause := p.Err()
			if ctx.Err() != nil {
				cause = ctx.Err()
			}
			p.closeErr = fmt.Errorf("events: %d queued events were not published on close: %w", lost, cause)
		}
	})
	return p.closeErr
}

// run is the publishing goroutine.
func (p *Publisher) run() {
	defer close(p.done)
	batch := make([]Event, 0, p.batch)
	for {
		select {
		case ev := <-p.queue:
			batch = p.fill(append(batch[:0], ev))
			p.publish(batch)
		case <-p.stop:
			p.flush(batch)
			return
		}
	}
}

// fill adds queued events to batch, without waiting, up to the batch size.
func (p *Publisher) fill(batch []Event) []Event {
	for len(batch) < p.batch {
		select {
		case ev := <-p.queue:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// flush publishes every queued event, or counts the rest as failed once runCtx is cancelled.
func (p *Publisher) flush(batch []Event) {
	for {
		batch = p.fill(batch[:0])
		if len(batch) == 0 {
			return
		}
		if p.runCtx.Err() != nil {
			p.failed.Add(uint64(len(batch) + len(p.queue)))
			return
		}
		p.publish(batch)
	}
}

// publish sends batch in one pipeline and updates the counters.
func (p *Publisher) publish(batch []Event) {
	ctx, cancel := context.WithTimeout(p.runCtx, p.timeout)
	defer cancel()
	pipe := p.client.Pipeline()
	cmds := make([]*redis.IntCmd, 0, len(batch))
	for _, ev := range batch {
		payload, err := ev.Encode()
		if err != nil { // cannot happen: every field is a string or a number
			p.failed.Add(1)
			continue
		}
		cmds = append(cmds, pipe.Publish(ctx, p.channel, payload))
	}
	_, _ = pipe.Exec(ctx)
	var failErr error
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			p.failed.Add(1)
			failErr = err
		} else {
			p.published.Add(1)
		}
	}
	p.setErr(failErr)
}

// setErr records the outcome of a pipeline and logs a change between failing and working.
func (p *Publisher) setErr(err error) {
	var prev *error
	if err == nil {
		prev = p.lastErr.Swap(nil)
		if prev != nil && p.logger != nil {
			p.logger.Info("Publishing lock events works again", "channel", p.channel)
		}
		return
	}
	wrapped := fmt.Errorf("events: publish on %q: %w", p.channel, err)
	prev = p.lastErr.Swap(&wrapped)
	if prev == nil && p.logger != nil {
		p.logger.Warn("Failed to publish lock events; they are dropped until Redis answers again",
			"channel", p.channel, "error", err)
	}
}
