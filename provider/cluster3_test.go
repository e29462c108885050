package provider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// On a three-master Cluster every lock's holder record, fence and fair-queue keys live in the
// lock key's slot (on its master), tokens rise per key, List reads the records of every master
// and ReleaseAll frees every master's locks with their records.
func TestClusterOfThreeKeepsSideKeysInTheLocksSlot(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	cl, nodes := cluster.Client(t), cluster.NodeClients(t)
	const ns = "c3:"
	p := locktest.NewProvider(t, cl, &provider.Options{Namespace: ns, FairQueue: true, Holder: provider.Holder{Program: "c3"}})
	c := ctx(t)
	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("k%02d", i), fmt.Sprintf("{cart:%d}:line", i))
	}
	tokens, err := p.AcquireTokens(c, keys, provider.AcquireOptions{Owner: "o", Expire: time.Minute})
	require.NoError(t, err)
	require.Len(t, tokens, len(keys))
	for _, node := range nodes {
		require.Positive(t, node.DBSize(c).Val(), "the keys are spread over every master")
	}
	slot := func(k string) int64 { return cl.ClusterKeySlot(c, k).Val() }
	for _, key := range keys {
		rk := ns + key
		require.Equal(t, slot(rk), slot(provider.RecordKey(rk)), "record of %s", key)
		queue, tickets := provider.QueueKeys(rk)
		require.Equal(t, slot(rk), slot(queue), "queue of %s", key)
		require.Equal(t, slot(rk), slot(tickets), "tickets of %s", key)
	}

	locks, err := opsOf(p).List(c)
	require.NoError(t, err)
	require.Len(t, locks, len(keys))
	for _, l := range locks {
		require.NotNil(t, l.Record, "record of %s", l.Key)
		require.Equal(t, "c3", l.Record.Program)
		require.Equal(t, tokens[l.Key], l.Record.FencingToken)
	}

	// A waiter queues on a held key: its queue lands in the key's slot, and it gets the key,
	// with a higher token, when the key is freed.
	held := keys[1]
	got := make(chan int64, 1)
	go func() {
		l, err := p.AcquireLease(context.WithoutCancel(c), []string{held}, provider.LeaseOptions{Timeout: wait})
		if err != nil {
			got <- -1
			return
		}
		got <- l.FencingToken()
		_, _ = l.Release(context.Background())
	}()
	queue, _ := provider.QueueKeys(ns + held)
	require.Eventually(t, func() bool { return cl.Exists(c, queue).Val() == 1 }, wait, poll)
	ok, err := p.Release(c, []string{held}, "o")
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, <-got, tokens[held], "the next hold's token is higher")

	n, err := p.ReleaseAll(c, "o")
	require.NoError(t, err)
	require.Equal(t, len(keys)-1, n)
	for _, node := range nodes {
		require.Empty(t, scanAll(t, node, "locktui:*holder*"), "every record went with its lock")
		require.Empty(t, scanAll(t, node, ns+"*"))
	}
}

// scanAll returns every key of node matching pattern.
func scanAll(t *testing.T, node *redis.Client, pattern string) []string {
	t.Helper()
	var out []string
	iter := node.Scan(ctx(t), 0, pattern, 100).Iterator()
	for iter.Next(ctx(t)) {
		out = append(out, iter.Val())
	}
	require.NoError(t, iter.Err())
	return out
}
