package provider_test

// The lean data model (docs/data-model.md): what an uncontended execute costs Redis, what stays
// after release, and scripts that never fail after their first write.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// maxCommandsPerExecute is the most Redis commands (the EVALSHAs and what the scripts run) an
// uncontended Execute may cost: docs/data-model.md counts them.
const maxCommandsPerExecute = 7

// An uncontended Execute costs at most maxCommandsPerExecute commands, and once every lock is
// released nothing of ours is left in Redis: no key per key ever locked (before: 14 commands, and
// a fence key per key for an hour).
func TestUncontendedExecutesAreLeanAndLeaveNothing(t *testing.T) {
	srv := redistest.Start(t)
	e := newEnvOn(t, srv, nil)
	c := ctx(t)
	// The first lease reads the server's run_id once (epochs) and starts the listener, which
	// checks the leases held when it first subscribes: neither is part of an execute.
	lease, err := e.P.AcquireLease(c, []string{"warm-up"}, provider.LeaseOptions{})
	require.NoError(t, err)
	awaitHearing(t, e.P, lease)
	_, err = lease.Release(c)
	require.NoError(t, err)
	require.NoError(t, e.RDB.ConfigResetStat(c).Err())
	const n = 200
	for i := range n {
		err := e.P.Execute(c, []string{fmt.Sprintf("cart:%d", i)}, func(context.Context) error { return nil }, provider.ExecuteOptions{})
		require.NoError(t, err)
	}
	_, all := commandCalls(t, e.RDB)
	// Less the CONFIG RESETSTAT itself and the run_id probes (INFO, every 500 ms while leases
	// exist), which are per Provider, not per execute.
	perExecute := float64(all-1-commandStats(t, e.RDB)["info"]) / n
	t.Logf("%.2f Redis commands per uncontended execute", perExecute)
	require.LessOrEqual(t, perExecute, float64(maxCommandsPerExecute))

	keys, err := e.RDB.Keys(c, "*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "every lock was released: nothing of ours may stay")
}

// A side key of another type (a hash where a string is kept, or the reverse: left by an older
// version, or written by hand) never makes a script fail after it wrote: the call succeeds, or
// fails and leaves no lock. Before, a holder record of another type made acquire.lua fail after
// its SET NX, and the lock stayed, without expiry for an acquire without one.
func TestASideKeyOfAnotherTypeNeverLeavesALockBehind(t *testing.T) {
	e := newEnv(t, &provider.Options{FairQueue: true})
	c := ctx(t)
	wrong := map[string]func(key string) error{
		"record hash":   func(key string) error { return e.RDB.HSet(c, provider.RecordKey(key), "f", "v").Err() },
		"record string": func(key string) error { return e.RDB.Set(c, provider.RecordKey(key), "x", 0).Err() },
		"queue":         func(key string) error { q, _ := provider.QueueKeys(key); return e.RDB.Set(c, q, "x", 0).Err() },
		"tickets": func(key string) error {
			_, tk := provider.QueueKeys(key)
			return e.RDB.Set(c, tk, "x", 0).Err()
		},
		"share":  func(key string) error { return e.RDB.Set(c, provider.ShareKey(key), "x", 0).Err() },
		"marker": func(key string) error { return e.RDB.HSet(c, provider.WaitersKey(key), "f", "v").Err() },
		// The fence key of earlier versions, which this one no longer uses: a hash there made
		// their acquire.lua fail after its SET NX.
		"old fence": func(key string) error { return e.RDB.HSet(c, "locktui:{"+key+"}:fence", "f", "v").Err() },
	}
	for name, spoil := range wrong {
		t.Run(name, func(t *testing.T) {
			k := "k-" + name
			require.NoError(t, spoil(e.Key(k)))
			for _, owner := range []string{"o", "o"} { // a take, then a re-entry
				err := e.P.Acquire(c, []string{k}, provider.AcquireOptions{Owner: owner, Expire: provider.NoExpiry})
				if err != nil {
					e.RequireFree(k)
					return
				}
				e.RequireOwner(k, owner)
			}
			ok, err := e.P.Release(c, []string{k}, "o")
			require.NoError(t, err)
			require.True(t, ok)
			e.RequireFree(k)

			wait, cancel := context.WithTimeout(c, 2*time.Second)
			defer cancel()
			err = e.P.Execute(wait, []string{k}, func(context.Context) error { return nil }, provider.ExecuteOptions{})
			if err != nil {
				t.Logf("execute: %v", err)
			}
			e.RequireFree(k)
		})
	}
}
