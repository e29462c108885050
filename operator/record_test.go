package operator_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/provider"
)

func TestHolderRecordDescribesTheLock(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	require.NoError(t, e.P.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: "o", Claim: "claim-1", Expire: time.Minute}))
	rec, ok, err := e.Ops.HolderRecord(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "locktui:{"+e.Key("k")+"}:hold", rec.Key)
	require.Equal(t, "o", rec.Owner)
	require.Equal(t, "claim-1", rec.Claim)
	require.False(t, rec.Reentered)
	require.True(t, rec.Current)
	require.WithinDuration(t, time.Now().Add(time.Minute), rec.ExpireAt, 5*time.Second)
	require.Equal(t, "claim-1", rec.Fields["claim"])

	// A re-entry without expiry: marked, no expiry, still current.
	require.NoError(t, e.P.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: "o", Claim: "claim-2", Expire: provider.NoExpiry}))
	rec, ok, err = e.Ops.HolderRecord(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, rec.Reentered)
	require.Equal(t, "claim-2", rec.Claim)
	require.True(t, rec.ExpireAt.IsZero())
	require.True(t, rec.Current)
}

// A change by a client that writes no record (stock Medusa, a plain SET or EXPIRE) leaves a record
// that no longer describes the lock.
func TestHolderRecordOfAChangedLockIsNotCurrent(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	for name, change := range map[string]func(){
		"another owner": func() { require.NoError(t, e.RDB.Set(c, e.Key("k"), "stock", 0).Err()) },
		"another TTL":   func() { require.NoError(t, e.RDB.Expire(c, e.Key("k"), time.Hour).Err()) },
		"deleted":       func() { require.NoError(t, e.RDB.Del(c, e.Key("k")).Err()) },
		"another type":  func() { e.RDB.Del(c, e.Key("k")); require.NoError(t, e.RDB.HSet(c, e.Key("k"), "f", "v").Err()) },
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, e.RDB.Del(c, e.Key("k")).Err())
			require.NoError(t, e.P.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
			change()
			rec, ok, err := e.Ops.HolderRecord(c, "k")
			require.NoError(t, err)
			require.True(t, ok, "the record stays until it expires")
			require.Equal(t, "o", rec.Owner)
			require.False(t, rec.Current)
		})
	}
}

func TestHolderRecordOfAStockLock(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Set("stock", "stock-owner", 0)
	_, ok, err := e.Ops.HolderRecord(c, "stock")
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = e.Ops.HolderRecord(c, "missing")
	require.NoError(t, err)
	require.False(t, ok)
}
