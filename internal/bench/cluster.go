package bench

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/redisproc"
)

// ClusterMasters is the number of masters of the cluster Run starts for the cluster scenarios.
const ClusterMasters = 3

// clusterPrefix names the cluster scenarios after the single-process ones they repeat.
const clusterPrefix = "cluster_"

// DefaultClusterScenarios returns the scenarios run on the local cluster: one uncontended and
// one contended default scenario, renamed cluster_<name>.
func DefaultClusterScenarios() []Scenario {
	var out []Scenario
	for _, s := range DefaultScenarios() {
		if s.Name == "uncontended_50" || s.Name == "contended_8x1ms" {
			s.Name = clusterPrefix + s.Name
			out = append(out, s)
		}
	}
	return out
}

// clusterNotes say which implementations the cluster run leaves out, and why.
var clusterNotes = []string{
	"stock: not run on the cluster: @medusajs/locking-redis 2.21.2's loader builds new Redis(redisUrl, redisOptions), a standalone ioredis client (never Redis.Cluster), so stock as Medusa configures it fails with MOVED on every key whose slot is on another master (checked by hand on a local 3-master cluster: 4 of 5 keys)",
}

// Cluster is a local Redis Cluster of ClusterMasters masters started for one run: redis-server
// processes in cluster mode on free loopback ports, the slots split evenly, no replicas.
type Cluster struct {
	// URL is the redisconn cluster URL, redis://node1?cluster=true&addr=node2&addr=node3.
	URL   string
	nodes []*redisproc.Server
}

// clusterStartTimeout bounds the wait for cluster_state:ok on every node.
const clusterStartTimeout = 30 * time.Second

// StartCluster starts the masters, assigns the slots, joins them with CLUSTER MEET and waits
// until every node reports cluster_state:ok and knows the others. Stop ends them (also when
// StartCluster fails, it stops what it started).
func StartCluster(ctx context.Context, masters int) (cl *Cluster, err error) {
	cl = &Cluster{}
	defer func() {
		if err != nil {
			cl.Stop()
			cl = nil
		}
	}()
	for range masters {
		n, err := redisproc.Start(ctx, redisproc.Options{Args: []string{"--cluster-enabled", "yes"}, KillWithParent: true})
		if err != nil {
			return nil, fmt.Errorf("bench: start a cluster node: %w", err)
		}
		cl.nodes = append(cl.nodes, n)
	}
	clients := make([]*redis.Client, masters)
	for i, n := range cl.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
	}
	per := 16384 / masters
	for i, c := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == masters-1 {
			hi = 16383
		}
		if err := c.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return nil, fmt.Errorf("bench: cluster addslots: %w", err)
		}
	}
	for _, n := range cl.nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Addr())
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			return nil, fmt.Errorf("bench: cluster meet: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	want := fmt.Sprintf("cluster_known_nodes:%d", masters)
	for {
		ok := true
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			ok = ok && err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: the cluster did not reach cluster_state:ok: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
	cl.URL = "redis://" + cl.nodes[0].Addr() + "?cluster=true"
	for _, n := range cl.nodes[1:] {
		cl.URL += "&addr=" + n.Addr()
	}
	return cl, nil
}

// Stop kills every node and removes their directories. It is safe to call more than once.
func (c *Cluster) Stop() {
	for _, n := range c.nodes {
		n.Stop()
	}
}

// runCluster starts the cluster and runs cfg.Cluster with the Go provider (in-process, a
// go-redis cluster client from redisconn.Open) and, when the bridge is among cfg.Impls, the
// bridge client through a bridge of its own on the cluster; it stops them and the cluster and
// returns the rows and the notes on what it left out.
func runCluster(ctx context.Context, cfg Config) ([]Result, []string, error) {
	fmt.Fprintf(cfg.Log, "bench: starting a local Redis Cluster (%d masters)\n", ClusterMasters)
	cl, err := StartCluster(ctx, ClusterMasters)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Stop()
	ccfg := cfg
	ccfg.RedisURL = cl.URL
	probe, err := openProbe(cl.URL)
	if err != nil {
		return nil, nil, err
	}
	defer probe.close()
	env := Env{RedisURL: cl.URL, CompatDir: cfg.CompatDir, Log: cfg.Log, FairQueue: cfg.FairQueue, bridge: &sharedBridge{}, probe: probe}
	defer func() {
		if err := env.bridge.stop(); err != nil {
			fmt.Fprintf(cfg.Log, "bench: warning: cluster: %v\n", err)
		}
	}()
	impls := []Impl{GoImpl{}}
	if slices.ContainsFunc(cfg.Impls, func(im Impl) bool { return im.Name() == BridgeName }) {
		impls = append(impls, bridgeImpl())
	}
	runners, err := openAll(ctx, impls, env)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	defer closeAll(impls, runners, cfg.Log)
	var out []Result
	for _, sc := range cfg.Cluster {
		for i, im := range impls {
			res, err := runSingle(ctx, ccfg, sc, im.Name(), runners[i], env)
			if err != nil {
				return nil, nil, fmt.Errorf("cluster: %w", err)
			}
			out = append(out, res)
		}
	}
	return out, clusterNotes, nil
}

// ClusterRatios divides each cluster row's throughput by the same implementation's on the
// single server in the same run: "<impl>_over_<impl>_standalone" (a cluster costs a hop per
// key's node; nothing else differs). Rows without a standalone twin get none.
func ClusterRatios(cluster, standalone []Result) map[string]map[string]*float64 {
	out := map[string]map[string]*float64{}
	for _, c := range cluster {
		for _, s := range standalone {
			if s.Impl == c.Impl && clusterPrefix+s.Name == c.Name {
				if out[c.Name] == nil {
					out[c.Name] = map[string]*float64{}
				}
				out[c.Name][c.Impl+"_over_"+c.Impl+"_standalone"] = ratio(c.Throughput(), s.Throughput())
			}
		}
	}
	return out
}
