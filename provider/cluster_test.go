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
	cfg := redistest.Config{Args: []string{"--cluster-enabled", "yes"}}
	a, b := redistest.StartWith(t, cfg), redistest.StartWith(t, cfg)
	ca, cb := a.Client(t), b.Client(t)
	c := ctx(t)
	require.NoError(t, ca.ClusterAddSlotsRange(c, 0, 8191).Err())
	require.NoError(t, cb.ClusterAddSlotsRange(c, 8192, 16383).Err())
	host, port, _ := strings.Cut(b.Addr, ":")
	require.NoError(t, ca.Do(c, "CLUSTER", "MEET", host, port).Err())
	require.Eventually(t, func() bool {
		for _, n := range []*redis.Client{ca, cb} {
			info, err := n.ClusterInfo(c).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:2") {
				return false
			}
		}
		return true
	}, wait, 20*time.Millisecond)
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr, b.Addr}})
	t.Cleanup(func() { _ = cl.Close() })
	require.Eventually(t, func() bool {
		cl.ReloadState(c)
		return cl.Ping(c).Err() == nil
	}, wait, 20*time.Millisecond)
	return cl, []*redis.Client{ca, cb}
}

// On a Cluster every key is its own slot-safe script call, and ReleaseAll, List and Scan walk
// every master (concurrently, with callbacks serialized: -race checks that).
func TestClusterWalksEveryMaster(t *testing.T) {
	t.Parallel()
	cl, nodes := startCluster(t)
	p := provider.New(cl, &provider.Options{Namespace: "cluster:"})
	c := ctx(t)
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	require.NoError(t, p.Acquire(c, keys, provider.AcquireOptions{Owner: "o"}))
	for _, node := range nodes {
		require.Positive(t, node.DBSize(c).Val(), "the keys are spread over both masters")
	}

	locks, err := p.List(c)
	require.NoError(t, err)
	require.Len(t, locks, 60)

	n, err := p.ReleaseAll(c, "o")
	require.NoError(t, err)
	require.Equal(t, 60, n)

	err = p.Execute(c, keys[:5], func(context.Context) error { return nil }, provider.ExecuteOptions{})
	require.NoError(t, err)
	locks, err = p.List(c)
	require.NoError(t, err)
	require.Empty(t, locks)
}
