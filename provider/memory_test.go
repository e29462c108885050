package provider_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// recordBudget is the most memory a held lock's side key (its holder record) may take,
// in bytes as MEMORY USAGE counts them, for the typical lock of the test below. docs/fencing.md
// states the measured figure; a change that makes records bigger fails here first. (A whole
// server's cost, hash tables included, is BenchmarkHolderRecordMemory100k's serverBudget.)
const recordBudget = 400

// The side key of a lock taken by Execute costs at most recordBudget beside the lock itself
// (logged).
func TestHolderRecordMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &provider.Options{Holder: provider.Holder{Host: "ip-10-0-12-34.ec2.internal", Program: "medusa-worker"}})
	c := ctx(t)
	const n = 200
	var lock, side, recs int64
	for i := range n {
		key := fmt.Sprintf("cart:cart_01J%023d", i)
		l, err := e.P.AcquireLease(c, []string{key}, provider.LeaseOptions{Expire: time.Minute})
		require.NoError(t, err)
		rk := e.Key(key)
		lock += e.RDB.MemoryUsage(c, rk).Val()
		rec := e.RDB.MemoryUsage(c, provider.RecordKey(rk)).Val()
		side, recs = side+rec, recs+rec
		_, err = l.Release(c)
		require.NoError(t, err)
	}
	perLock, perSide := lock/n, side/n
	t.Logf("a lock takes %d bytes, its holder record %d more (the record key %d), as MEMORY USAGE counts them",
		perLock, perSide, recs/n)
	require.LessOrEqual(t, perSide, int64(recordBudget))
}
