package provider_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// recordBudget is the most memory a held lock's side keys (holder record and fence) may take,
// in bytes as MEMORY USAGE counts them, for the typical lock of the test below. docs/fencing.md
// states the measured figure; a change that makes records bigger fails here first. (A whole
// server's cost, hash tables included, is BenchmarkHolderRecordMemory100k's serverBudget.)
const recordBudget = 600

// The side keys of a lock taken by Execute cost at most recordBudget beside the lock itself
// (logged).
func TestHolderRecordMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &provider.Options{Holder: provider.Holder{Host: "ip-10-0-12-34.ec2.internal", Program: "medusa-worker"}})
	c := ctx(t)
	const n = 200
	var lock, side, recs int64
	for i := range n {
		key := fmt.Sprintf("cart:cart_01J%023d", i)
		l, err := e.p.AcquireLease(c, []string{key}, provider.LeaseOptions{Expire: time.Minute})
		require.NoError(t, err)
		rk := e.key(key)
		lock += e.rdb.MemoryUsage(c, rk).Val()
		rec, fence := e.rdb.MemoryUsage(c, provider.RecordKey(rk)).Val(), e.rdb.MemoryUsage(c, provider.FenceKey(rk)).Val()
		side, recs = side+rec+fence, recs+rec
		_, err = l.Release(c)
		require.NoError(t, err)
	}
	perLock, perSide := lock/n, side/n
	t.Logf("a lock takes %d bytes, its holder record and fence %d more (the record %d), as MEMORY USAGE counts them",
		perLock, perSide, recs/n)
	require.LessOrEqual(t, perSide, int64(recordBudget))
}
