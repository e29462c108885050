package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/redisproc"
)

// clusterClientReady bounds Cluster.Client's wait until its client has learnt the slots.
const clusterClientReady = 30 * time.Second

// Cluster is a Redis Cluster owned by one test (redisproc.StartCluster): masters on free
// loopback ports, the slots split evenly between them, no replicas.
type Cluster struct {
	// URL is the cluster's address in redisconn.Open's format:
	// redis://node1?cluster=true&addr=node2&addr=node3.
	URL string
	// Addrs are the masters' host:port, in slot order.
	Addrs []string
}

// StartCluster starts a cluster of masters masters, waits until every node reports it up, and
// stops it when the test ends. It fails the test (never skips) when redis-server is not
// installed.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	cl, err := redisproc.StartCluster(t.Context(), masters)
	mustStart(t, "start a Redis Cluster", err)
	t.Cleanup(cl.Stop)
	return &Cluster{URL: cl.URL, Addrs: cl.Addrs()}
}

// Client returns a cluster client that has learnt the slots and answers PING, closed when the
// test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { _ = cl.Close() })
	await(t, clusterClientReady, "a cluster client to learn the slots", func(ctx context.Context) error {
		cl.ReloadState(ctx)
		return cl.Ping(ctx).Err()
	})
	return cl
}

// NodeClients returns a plain client for each master, in slot order, closed when the test ends.
func (c *Cluster) NodeClients(t testing.TB) []*redis.Client {
	t.Helper()
	clients := make([]*redis.Client, len(c.Addrs))
	for i, addr := range c.Addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	return clients
}
