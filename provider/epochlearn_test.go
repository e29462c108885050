package provider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// Defect (found measuring a Sentinel failover, issue 21): a provider that had not read its
// server's run_id yet took it from the first probe that answered. When the server changed
// between a lease's acquisition and that probe (a failover, a restart), the probe recorded the
// new server as the lease's, and the holder was told only at its next renewal (20 s away for a
// 60 s lease) while the keys were gone. A provider now reads the run_id before its first lease
// takes anything.
func TestAServerChangeBeforeTheFirstProbeIsNoticed(t *testing.T) {
	srv := redistest.Start(t)
	opened := make(chan struct{})
	holdInfo := func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "info" {
			select {
			case <-opened:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	gate := &redistest.Recorder{}
	e := newEnvOn(t, srv, &provider.Options{Observer: provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventAcquired {
			gate.BeforeSend(holdInfo) // the probes that follow the acquisition wait for the gate
		}
	})})
	e.PC.AddHook(gate)
	l, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{Expire: time.Minute})
	require.NoError(t, err)
	defer func() { _, _ = l.Release(context.Background()) }()
	srv.Restart(t, 0)
	close(opened)
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease outlived the change of its server by 5 s")
	}
	require.ErrorIs(t, l.Err(), provider.ErrServerRestarted)
}

// Found in review (issue 21): a lease whose wait saw a probe find the server changed (a
// failover, while the provider's other leases were lost) was granted and watched against the new
// server, although its keys may have been taken on the old one before it died: its holder would
// be told only at its first renewal. Such a grant is given back and tried again.
func TestALeaseWhoseWaitSawTheServerChangeIsTakenAgain(t *testing.T) {
	logs := &logSink{}
	var e *env
	changed := false
	e = newEnv(t, &provider.Options{Logger: logs.logger(), Observer: provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting && !changed {
			changed = true
			provider.NoteServerChange(e.P)
			e.RDB.Del(context.Background(), e.Key("k")) // the holder's lock goes: the wait takes the key next
		}
	})})
	e.Set("k", "holder", 0)
	l, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{Expire: time.Minute, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer func() { _, _ = l.Release(context.Background()) }()
	require.NoError(t, l.Err(), "the lease taken again is watched against the server it was taken on")
	require.Contains(t, fmt.Sprint(logs.messages()), "the Redis server changed (a failover or a restart) while a lease was being taken")
}
