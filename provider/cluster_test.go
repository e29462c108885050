package provider_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// On a Cluster every key is its own slot-safe script call, and ReleaseAll, List and Scan walk
// every master (concurrently, with callbacks serialized: -race checks that).
func TestClusterWalksEveryMaster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 2)
	cl, nodes := cluster.Client(t), cluster.NodeClients(t)
	p := locktest.NewProvider(t, cl, &provider.Options{Namespace: "cluster:"})
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
