package redistest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// recorded starts a server and returns it with a client of it that rec hooks, on a connection
// not yet made: its handshake goes through rec.
func recorded(t *testing.T, rec *redistest.Recorder) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(rec)
	return srv, c
}

func names(calls []redistest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name())
	}
	return out
}

func TestRecorderRecordsCommandsAndRoundTrips(t *testing.T) {
	rec := &redistest.Recorder{}
	_, c := recorded(t, rec)
	ctx := t.Context()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Get(ctx, "missing")
		return nil
	})
	require.ErrorIs(t, err, redis.Nil)

	calls := rec.Calls()
	assert.Equal(t, []string{"set", "get", "get"}, names(calls), "the handshake is left out")
	assert.Equal(t, []int{1, 2, 2}, []int{calls[0].Trip, calls[1].Trip, calls[2].Trip}, "a pipeline is one round trip")
	assert.NoError(t, calls[1].Err)
	assert.ErrorIs(t, calls[2].Err, redis.Nil)
	for _, call := range calls {
		assert.False(t, call.Replied.Before(call.Sent), "%s replied before it was sent", call.Name())
	}
	assert.Equal(t, 2, rec.Count("get"))
	assert.Equal(t, 2, rec.Trips())

	cmds, trips := rec.Reset()
	assert.Equal(t, 3, cmds)
	assert.Equal(t, 2, trips)
	assert.Empty(t, rec.Calls())
	assert.Zero(t, rec.Count("get"))
}

func TestRecorderWithHandshakeRecordsTheConnectionSetUp(t *testing.T) {
	rec := &redistest.Recorder{Handshake: true}
	_, c := recorded(t, rec)
	require.NoError(t, c.Ping(t.Context()).Err())
	assert.Equal(t, 1, rec.Count("hello"))
	assert.Equal(t, 1, rec.Count("ping"))
}

func TestRecorderBeforeSendFailsARoundTripUnsent(t *testing.T) {
	rec := &redistest.Recorder{}
	srv, c := recorded(t, rec)
	ctx := t.Context()
	refused := errors.New("refused")
	rec.BeforeSend(func(_ context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "del" {
			return refused
		}
		return nil
	})
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Del(ctx, "b")
		return nil
	})
	require.ErrorIs(t, err, refused)
	for _, cmd := range cmds {
		assert.ErrorIs(t, cmd.Err(), refused, "every command of the round trip fails")
	}
	assert.Zero(t, srv.Client(t).Exists(ctx, "a").Val(), "nothing was sent")
	assert.Empty(t, rec.Calls(), "nor recorded")

	// A delay honours the context.
	rec.BeforeSend(func(ctx context.Context, _ redis.Cmder) error {
		<-ctx.Done()
		return ctx.Err()
	})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Ping(short).Err(), context.DeadlineExceeded)

	rec.BeforeSend(nil)
	require.NoError(t, c.Ping(ctx).Err())
}

func TestRecorderAfterReplyLosesTheReply(t *testing.T) {
	rec := &redistest.Recorder{}
	srv, c := recorded(t, rec)
	ctx := t.Context()
	lost := errors.New("lost")
	rec.AfterReply(func(context.Context, redis.Cmder) error { return lost })
	require.ErrorIs(t, c.Set(ctx, "k", "v", 0).Err(), lost)
	assert.Equal(t, "v", srv.Client(t).Get(ctx, "k").Val(), "the command ran")
	calls := rec.Calls()
	require.Len(t, calls, 1)
	assert.NoError(t, calls[0].Err, "Err keeps what Redis answered")
}

// CountOnly counts without keeping, and without an allocation per command.
func TestRecorderCountOnlyAllocatesNothing(t *testing.T) {
	rec := &redistest.Recorder{CountOnly: true}
	ctx := t.Context()
	cmd := redis.NewStringCmd(ctx, "get", "k")
	one := rec.ProcessHook(func(context.Context, redis.Cmder) error { return nil })
	pipe := rec.ProcessPipelineHook(func(context.Context, []redis.Cmder) error { return nil })
	cmds := []redis.Cmder{cmd, cmd}
	_ = one(ctx, cmd) // the first command makes the counts
	allocs := testing.AllocsPerRun(100, func() {
		_ = one(ctx, cmd)
		_ = pipe(ctx, cmds)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 1+3*101, rec.Count("get"))
	assert.Equal(t, 1+2*101, rec.Trips())
	assert.Empty(t, rec.Calls())
}
