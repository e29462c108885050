package bench

import (
	"context"
	"fmt"
	"slices"

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

// runCluster starts the cluster and runs cfg.Cluster with the Go provider (in-process, a
// go-redis cluster client from redisconn.Open) and, when the bridge is among cfg.Impls, the
// bridge client through a bridge of its own on the cluster; it stops them and the cluster and
// returns the rows and the notes on what it left out.
func runCluster(ctx context.Context, cfg Config) ([]Result, []string, error) {
	fmt.Fprintf(cfg.Log, "bench: starting a local Redis Cluster (%d masters)\n", ClusterMasters)
	cl, err := redisproc.StartCluster(ctx, ClusterMasters)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
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
