package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// startCluster starts a two-master Redis Cluster (slots split in half) and returns a cluster
// client and a plain client for each master.
func startCluster(t *testing.T) (*redis.ClusterClient, []*redis.Client) {
	t.Helper()
	return startClusterOf(t, 2)
}

// startClusterOf starts a Redis Cluster of n masters (slots split evenly) and returns a cluster
// client and a plain client for each master.
func startClusterOf(t *testing.T, n int) (*redis.ClusterClient, []*redis.Client) {
	t.Helper()
	cfg := redistest.Config{Args: []string{"--cluster-enabled", "yes"}}
	c := ctx(t)
	var nodes []*redis.Client
	var addrs []string
	for i := range n {
		srv := redistest.StartWith(t, cfg)
		node := srv.Client(t)
		first, last := i*16384/n, (i+1)*16384/n-1
		require.NoError(t, node.ClusterAddSlotsRange(c, first, last).Err())
		if i > 0 {
			host, port, _ := strings.Cut(srv.Addr, ":")
			require.NoError(t, nodes[0].Do(c, "CLUSTER", "MEET", host, port).Err())
		}
		nodes, addrs = append(nodes, node), append(addrs, srv.Addr)
	}
	known := fmt.Sprintf("cluster_known_nodes:%d", n)
	require.Eventually(t, func() bool {
		for _, node := range nodes {
			info, err := node.ClusterInfo(c).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, known) {
				return false
			}
		}
		return true
	}, wait, 20*time.Millisecond)
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = cl.Close() })
	require.Eventually(t, func() bool {
		cl.ReloadState(c)
		return cl.Ping(c).Err() == nil
	}, wait, 20*time.Millisecond)
	return cl, nodes
}

// On a Cluster every key is its own slot-safe script call, and ReleaseAll, List and Scan walk
// every master (concurrently, with callbacks serialized: -race checks that).
func TestClusterWalksEveryMaster(t *testing.T) {
	t.Parallel()
	cl, nodes := startCluster(t)
	p := newProvider(t, cl, &provider.Options{Namespace: "cluster:"})
	c := ctx(t)
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	require.NoError(t, p.Acquire(c, keys, provider.AcquireOptions{Owner: "o"}))
	for _, node := range nodes {
		require.Positive(t, node.DBSize(c).Val(), "the keys are spread over both masters")
	}

	locks, err := opsOf(p).List(c)
	require.NoError(t, err)
	require.Len(t, locks, 60)

	n, err := p.ReleaseAll(c, "o")
	require.NoError(t, err)
	require.Equal(t, 60, n)

	err = p.Execute(c, keys[:5], func(context.Context) error { return nil }, provider.ExecuteOptions{})
	require.NoError(t, err)
	locks, err = opsOf(p).List(c)
	require.NoError(t, err)
	require.Empty(t, locks)
}
