package redisproc

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Bounds of StartCluster: clusterReady for every node to report cluster_state:ok and to know
// the others, polled every clusterPoll.
const (
	clusterReady = 30 * time.Second
	clusterPoll  = 20 * time.Millisecond
)

// Cluster is a local Redis Cluster: masters in cluster mode on free loopback ports, the slots
// split evenly between them, no replicas. Its methods are safe for concurrent use.
type Cluster struct {
	// URL is the cluster's address in redisconn.Open's format:
	// redis://node1?cluster=true&addr=node2&addr=node3.
	URL string
	// Nodes are the masters, in slot order: Nodes[0] serves the first slots.
	Nodes []*Server
}

// StartCluster starts masters redis-server processes in cluster mode (each dies with the
// process that started it: Options.KillWithParent), gives each an even share of the slots,
// joins them with CLUSTER MEET and waits until every node reports cluster_state:ok and knows
// the others. ctx bounds the start-up. When it fails it stops what it started; a missing
// redis-server gives an error matching ErrNotFound.
func StartCluster(ctx context.Context, masters int) (cl *Cluster, err error) {
	if masters < 1 {
		return nil, fmt.Errorf("start a cluster of %d masters: want at least one", masters)
	}
	cl = &Cluster{}
	defer func() {
		if err != nil {
			cl.Stop()
			cl = nil
		}
	}()
	for range masters {
		n, err := Start(ctx, Options{Args: []string{"--cluster-enabled", "yes"}, KillWithParent: true})
		if err != nil {
			return nil, fmt.Errorf("start a cluster node: %w", err)
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	clients := make([]*redis.Client, masters)
	for i, n := range cl.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
	}
	for i, c := range clients {
		first, last := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if err := c.ClusterAddSlotsRange(ctx, first, last).Err(); err != nil {
			return nil, fmt.Errorf("cluster addslotsrange on %s: %w", cl.Nodes[i].Addr(), err)
		}
	}
	for _, n := range cl.Nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Addr())
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			return nil, fmt.Errorf("cluster meet %s: %w", n.Addr(), err)
		}
	}
	if err := awaitClusterOK(ctx, clients); err != nil {
		return nil, err
	}
	cl.URL = "redis://" + cl.Nodes[0].Addr() + "?cluster=true"
	for _, n := range cl.Nodes[1:] {
		cl.URL += "&addr=" + n.Addr()
	}
	return cl, nil
}

// awaitClusterOK polls CLUSTER INFO on every node until each reports cluster_state:ok and
// knows all the others, or ctx or clusterReady ends.
func awaitClusterOK(ctx context.Context, clients []*redis.Client) error {
	ctx, cancel := context.WithTimeout(ctx, clusterReady)
	defer cancel()
	known := fmt.Sprintf("cluster_known_nodes:%d", len(clients))
	tick := time.NewTicker(clusterPoll)
	defer tick.Stop()
	for {
		ok := true
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			ok = ok && err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, known)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not reach cluster_state:ok: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// Addrs returns the masters' host:port, in slot order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Stop kills every node and removes their directories. It is safe to call more than once.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}
