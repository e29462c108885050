package events_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ns = "test_lock:"

// next returns the next event of sub, failing the test if none arrives in time.
func next(t *testing.T, sub *events.Subscription) events.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		require.True(t, ok, "subscription closed while waiting for an event")
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return events.Event{}
	}
}

func subscribe(t *testing.T, client redis.UniversalClient) *events.Subscription {
	t.Helper()
	sub, err := events.Subscribe(t.Context(), client, ns)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

func closePublisher(t *testing.T, pub *events.Publisher) {
	t.Helper()
	t.Cleanup(func() { _ = pub.Close(context.Background()) })
}

func TestProviderEventsReachSubscriber(t *testing.T) {
	client := redistest.Start(t).Client(t)
	sub := subscribe(t, client)
	pub := events.NewPublisher(client, ns, events.SourceGo, nil)
	closePublisher(t, pub)
	p := provider.New(client, &provider.Options{Namespace: ns, Observer: pub,
		DefaultRetryInterval: 5 * time.Millisecond, MaximumRetryInterval: 20 * time.Millisecond})
	ctx := t.Context()
	start := time.Now()
	host, err := os.Hostname()
	require.NoError(t, err)

	require.NoError(t, p.Acquire(ctx, []string{"cart:1"}, provider.AcquireOptions{Owner: "holder"}))
	ev := next(t, sub)
	assert.Equal(t, events.Event{V: 1, Kind: provider.EventAcquired, Key: "cart:1", Owner: "holder",
		TS: ev.TS, Source: "go", Host: host, PID: os.Getpid()}, ev)
	assert.WithinRange(t, ev.Time(), start.Truncate(time.Millisecond), time.Now())

	waited := make(chan error, 1)
	go func() {
		waited <- p.Acquire(ctx, []string{"cart:1"}, provider.AcquireOptions{Owner: "waiter", AwaitQueue: true})
	}()
	ev = next(t, sub)
	assert.Equal(t, provider.EventWaiting, ev.Kind)
	assert.Equal(t, "waiter", ev.Owner)
	assert.Equal(t, "cart:1", ev.Key)

	ok, err := p.Release(ctx, []string{"cart:1"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, <-waited)
	// The release wakes the waiter at once, so the waiter's event may be published before the
	// releaser's: the two calls' events come in either order.
	first, second := next(t, sub), next(t, sub)
	if first.Kind != provider.EventReleased {
		first, second = second, first
	}
	ev = first
	assert.Equal(t, provider.EventReleased, ev.Kind)
	assert.Equal(t, "holder", ev.Owner)

	ev = second
	assert.Equal(t, provider.EventAcquired, ev.Kind)
	assert.Equal(t, "waiter", ev.Owner)
	// Whole milliseconds: a wait that a release ended within one is 0.
	assert.GreaterOrEqual(t, ev.WaitMS, int64(0), "an acquisition after a wait reports its wait")
	assert.LessOrEqual(t, ev.Wait(), time.Since(start), "no longer than the waiter waited")
	assert.Equal(t, time.Duration(ev.WaitMS)*time.Millisecond, ev.Wait())

	require.NoError(t, pub.Close(ctx))
	assert.EqualValues(t, 4, pub.Published())
	assert.Zero(t, pub.Dropped())
	assert.Zero(t, pub.Failed())
	assert.NoError(t, pub.Err())
}

func TestSubscriptionSkipsMalformedMessages(t *testing.T) {
	client := redistest.Start(t).Client(t)
	sub := subscribe(t, client)
	ctx := t.Context()
	bad := []string{
		"not json",
		`["v",1]`,
		`{"v":2,"kind":"acquired","key":"k"}`,
		`{"v":1,"kind":"exploded","key":"k"}`,
		`{"v":1,"kind":"acquired","key":""}`,
		`{"v":1,"kind":"acquired","key":"k","ts":"yesterday"}`,
	}
	for _, msg := range bad {
		require.NoError(t, client.Publish(ctx, events.ChannelFor(ns), msg).Err())
	}
	good := `{"v":1,"kind":"lost","key":"k","owner":"o","ts":5,"held_ms":7,"source":"bridge","extra":true}`
	require.NoError(t, client.Publish(ctx, events.ChannelFor(ns), good).Err())

	ev := next(t, sub)
	assert.Equal(t, events.Event{V: 1, Kind: provider.EventLost, Key: "k", Owner: "o", TS: 5, HeldMS: 7, Source: "bridge"}, ev)
	assert.EqualValues(t, len(bad), sub.Malformed(), "every malformed message before the good one is counted")
}

func TestCloseFlushesQueuedEventsAndStops(t *testing.T) {
	client := redistest.Start(t).Client(t)
	sub := subscribe(t, client)
	pub := events.NewPublisher(client, ns, events.SourceCLI, &events.PublisherOptions{Batch: 3})
	const n = 50
	for i := range n {
		pub.LockEvent(provider.Event{Kind: provider.EventAcquired, Key: "k", Owner: string(rune('a' + i%26))})
	}
	require.NoError(t, pub.Close(t.Context()))
	require.NoError(t, pub.Close(t.Context()), "a second Close returns the first result")
	for i := range n {
		ev := next(t, sub)
		assert.Equal(t, string(rune('a'+i%26)), ev.Owner, "event %d out of order", i)
	}
	assert.EqualValues(t, n, pub.Published())

	pub.LockEvent(provider.Event{Kind: provider.EventReleased, Key: "k"})
	assert.EqualValues(t, 1, pub.Dropped(), "an event after Close is dropped, not sent")
}

func TestRenewedEventsAreOptIn(t *testing.T) {
	for _, include := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "included"}[include], func(t *testing.T) {
			client := redistest.Start(t).Client(t)
			sub := subscribe(t, client)
			pub := events.NewPublisher(client, ns, events.SourceGo, &events.PublisherOptions{IncludeRenewed: include})
			closePublisher(t, pub)
			pub.LockEvent(provider.Event{Kind: provider.EventRenewed, Key: "k", Owner: "o", Held: 1500 * time.Millisecond})
			pub.LockEvent(provider.Event{Kind: provider.EventReleased, Key: "k", Owner: "o"})
			ev := next(t, sub)
			if include {
				assert.Equal(t, provider.EventRenewed, ev.Kind)
				assert.EqualValues(t, 1500, ev.HeldMS)
				ev = next(t, sub)
			}
			assert.Equal(t, provider.EventReleased, ev.Kind)
		})
	}
}

// stalledRedis returns a client whose server accepts connections and never answers.
func stalledRedis(t *testing.T) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestFullBufferDropsInsteadOfBlocking(t *testing.T) {
	const buffer, batch, sent = 4, 1, 100
	pub := events.NewPublisher(stalledRedis(t), ns, events.SourceGo,
		&events.PublisherOptions{Buffer: buffer, Batch: batch, Timeout: 300 * time.Millisecond})
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for range sent {
			pub.LockEvent(provider.Event{Kind: provider.EventAcquired, Key: "k", Owner: "o"})
		}
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("LockEvent blocked on a stalled Redis")
	}
	assert.GreaterOrEqual(t, pub.Dropped(), uint64(sent-buffer-batch))

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := pub.Close(ctx)
	require.Error(t, err, "events that were never published are reported")
	assert.Contains(t, err.Error(), "were not published")
	assert.Equal(t, uint64(sent), pub.Dropped()+pub.Failed()+pub.Published())
	assert.Zero(t, pub.Published())
}

func TestPublishFailureIsReported(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	pub := events.NewPublisher(client, ns, events.SourceGo, &events.PublisherOptions{Timeout: 500 * time.Millisecond})
	closePublisher(t, pub)
	srv.Stop()
	pub.LockEvent(provider.Event{Kind: provider.EventAcquired, Key: "k"})
	require.Eventually(t, func() bool { return pub.Failed() == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.ErrorContains(t, pub.Err(), events.ChannelFor(ns))
}

func TestSubscriptionEndsWithContext(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx, cancel := context.WithCancel(t.Context())
	sub, err := events.Subscribe(ctx, client, ns)
	require.NoError(t, err)
	cancel()
	select {
	case _, ok := <-sub.C():
		assert.False(t, ok, "no event was published")
	case <-time.After(5 * time.Second):
		t.Fatal("C was not closed when ctx ended")
	}
	require.NoError(t, sub.Close(), "Close after the context ended is a no-op")
}

func TestSubscribeFailsWithoutRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	srv.Stop()
	_, err := events.Subscribe(t.Context(), client, ns)
	require.Error(t, err)
	assert.Contains(t, err.Error(), events.ChannelFor(ns))
}

func TestChannelFor(t *testing.T) {
	assert.Equal(t, "locktui:events:medusa_lock:", events.ChannelFor(""))
	assert.Equal(t, "locktui:events:shop:", events.ChannelFor("shop:"))
}

func TestDecodeRoundTrip(t *testing.T) {
	in := events.Event{V: 1, Kind: provider.EventGaveUp, Key: "cart:é", Owner: "execute:x", TS: 1700000000123,
		WaitMS: 5000, Source: "bridge", Host: "h", PID: 9}
	payload, err := in.Encode()
	require.NoError(t, err)
	out, err := events.Decode(payload)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	_, err = events.Decode([]byte(`{}`))
	assert.True(t, errors.Is(err, events.ErrMalformed), "Decode({}) = %v, want ErrMalformed", err)
}

func TestSubscriptionSurvivesAKilledConnection(t *testing.T) {
	client := redistest.Start(t).Client(t)
	sub := subscribe(t, client)
	ctx := t.Context()
	require.NoError(t, client.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err())
	msg := `{"v":1,"kind":"acquired","key":"after-reconnect"}`
	// Events published while the subscriber reconnects are lost, so publish until one arrives.
	require.Eventually(t, func() bool {
		require.NoError(t, client.Publish(ctx, events.ChannelFor(ns), msg).Err())
		select {
		case ev := <-sub.C():
			return ev.Key == "after-reconnect"
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, 10*time.Second, time.Millisecond)
	assert.NoError(t, sub.Err(), "Err is cleared once messages flow again")
}
