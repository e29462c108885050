package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// MultiScenario is a contended workload run by several processes at once, all on one key: each
// process runs Workers workers of the Scenario loop, and every process opens its window at the
// same moment (Spec.StartAtUnixMs). Processes names each process's implementation, so a
// scenario can mix implementations (Go beside stock, as a fleet being migrated would).
type MultiScenario struct {
	// Name identifies the scenario in the report, e.g. "multi_go_stock".
	Name string
	// Processes names the implementation of each process ("go", "stock", "bridge").
	Processes []string
	// Workers is the number of workers in each process.
	Workers int
	// CriticalSection is how long each job holds the key.
	CriticalSection time.Duration
}

// BaselineMulti is the multi-process scenario every multi-process ratio divides by: every
// process stock.
const BaselineMulti = "multi_stock"

// DefaultMultiScenarios returns the multi-process scenarios `make bench` runs: 4 processes × 4
// workers, 2 ms critical sections, all stock (the baseline), all Go, Go + stock (2 + 2), all
// bridge, bridge + stock (2 + 2). Bridge processes share one bridge server.
func DefaultMultiScenarios() []MultiScenario {
	mk := func(name string, procs ...string) MultiScenario {
		return MultiScenario{Name: name, Processes: procs, Workers: 4, CriticalSection: 2 * time.Millisecond}
	}
	return []MultiScenario{
		mk(BaselineMulti, "stock", "stock", "stock", "stock"),
		mk("multi_go", "go", "go", "go", "go"),
		mk("multi_go_stock", "go", "stock", "go", "stock"),
		mk("multi_bridge", BridgeName, BridgeName, BridgeName, BridgeName),
		mk("multi_bridge_stock", BridgeName, "stock", BridgeName, "stock"),
	}
}

// impls returns the scenario's implementations, each once, in order of first appearance.
func (m MultiScenario) impls() []string {
	var out []string
	for _, p := range m.Processes {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// multiStartMargin is how far ahead of sending the scenarios the window opens, so that every
// process has opened its provider and warmed up by then; a process that is late says so
// (start_late_ms) and is reported as a problem.
const multiStartMargin = 1500 * time.Millisecond

// processImpl is the implementation run by one process of a multi-process scenario.
func processImpl(name string, cfg Config) Impl {
	switch name {
	case "go":
		return GoProcessImpl{Command: cfg.GoWorker}
	case "stock":
		return NodeImpl{ImplName: "stock", Script: "bench/stock-bench.js"}
	case BridgeName:
		return bridgeImpl()
	}
	return nil
}

// processCounts is how many processes of each implementation the scenarios need at most.
func processCounts(ms []MultiScenario) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		n := map[string]int{}
		for _, p := range m.Processes {
			n[p]++
		}
		for impl, c := range n {
			out[impl] = max(out[impl], c)
		}
	}
	return out
}

// selectMulti keeps the scenarios whose implementations are all among impls.
func selectMulti(ms []MultiScenario, impls []Impl) []MultiScenario {
	var out []MultiScenario
	for _, m := range ms {
		ok := true
		for _, p := range m.impls() {
			ok = ok && slices.ContainsFunc(impls, func(im Impl) bool { return im.Name() == p })
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// openPool opens every process the scenarios need, at once (see openAll).
func openPool(ctx context.Context, cfg Config, ms []MultiScenario, env Env) (map[string][]Runner, func(), error) {
	var impls []Impl
	var names []string
	counts := processCounts(ms)
	for _, name := range []string{"go", "stock", BridgeName} {
		for range counts[name] {
			impls = append(impls, processImpl(name, cfg))
			names = append(names, name)
		}
	}
	runners, err := openAll(ctx, impls, env)
	if err != nil {
		return nil, func() {}, err
	}
	out := map[string][]Runner{}
	for i, r := range runners {
		out[names[i]] = append(out[names[i]], r)
	}
	return out, func() { closeAll(impls, runners, env.Log) }, nil
}

// multiSpec is process p's spec: one key and one counter shared by every process, in the
// bridge's namespace (the bridge's is fixed when it starts, and every process must lock the
// same Redis key), a warm-up key of its own.
func multiSpec(cfg Config, m MultiScenario, p int, startAt time.Time) Spec {
	return Spec{
		Scenario:      m.Name,
		Impl:          m.Processes[p],
		Process:       p,
		Workers:       m.Workers,
		Keys:          []string{m.Name + ":" + sharedKey},
		CSMs:          ms(m.CriticalSection),
		DurationMs:    ms(cfg.MultiDuration),
		Warmup:        cfg.Warmup,
		WarmupKey:     fmt.Sprintf("%s:%s:p%d", m.Name, warmupKey, p),
		TimeoutS:      cfg.Timeout.Seconds(),
		ExpireS:       cfg.Expire.Seconds(),
		RedisURL:      cfg.RedisURL,
		Namespace:     Namespace(BridgeName),
		CounterKey:    counterPrefix + "multi:" + m.Name,
		KeepCounter:   true,
		StartAtUnixMs: unixMs(startAt),
	}
}

// runMulti runs one multi-process scenario: it resets the shared counter, sends every process
// its spec at once and collects their observations, and measures over the window the Redis
// server's CPU and commands, the CPU of the bridge server when bridge processes take part and
// of the machine, and the keys the scenario left in Redis.
func runMulti(ctx context.Context, cfg Config, m MultiScenario, procs map[string][]Runner, env Env) ([]*Raw, windowCost, error) {
	if err := resetCounter(ctx, cfg.RedisURL, counterPrefix+"multi:"+m.Name); err != nil {
		return nil, windowCost{}, err
	}
	keys := env.probe.trackKeys(ctx)
	startAt := time.Now().Add(multiStartMargin)
	cost := measureWindow(ctx, env.bridgePid(slices.Contains(m.Processes, BridgeName)), env.probe, startAt)
	raws := make([]*Raw, len(m.Processes))
	errs := make([]error, len(m.Processes))
	next := map[string]int{}
	var wg sync.WaitGroup
	for p, impl := range m.Processes {
		i := next[impl]
		next[impl]++
		if i >= len(procs[impl]) {
			return nil, windowCost{}, fmt.Errorf("%s: no %s process #%d", m.Name, impl, i)
		}
		r := procs[impl][i]
		spec := multiSpec(cfg, m, p, startAt)
		wg.Go(func() { raws[p], errs[p] = r.Run(ctx, spec) })
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			return nil, windowCost{}, fmt.Errorf("%s, process %d (%s): %w", m.Name, p, m.Processes[p], err)
		}
	}
	use := cost()
	var keysErr error
	if use.keys, use.keysOK, keysErr = keys(); keysErr != nil {
		fmt.Fprintf(cfg.Log, "bench: warning: %s: the keys left: %v\n", m.Name, keysErr)
	}
	return raws, use, nil
}

// SummarizeMulti computes the rows of one multi-process scenario: one per implementation (its
// processes together) and, when implementations are mixed, an "all" row for the whole key.
// cost is what the window cost the bridge server, the Redis server and the machine: the Redis
// server's counters, and the keys left, are charged to the rows of every process (one
// implementation's, or the all row).
func SummarizeMulti(cfg Config, m MultiScenario, raws []*Raw, cost windowCost) []Result {
	cfg = cfg.withDefaults()
	var all []Section
	for p, raw := range raws {
		all = append(all, raw.sections(p)...)
	}
	handoffs := CountHandoffs(all)
	total := 0
	for _, raw := range raws {
		for _, c := range raw.Completed {
			total += c
		}
	}
	groups := m.impls()
	if len(groups) > 1 {
		groups = append(groups, "all")
	}
	var out []Result
	for _, impl := range groups {
		var procs []int
		for p, name := range m.Processes {
			if impl == "all" || name == impl {
				procs = append(procs, p)
			}
		}
		merged, perProc, h := &Raw{}, [][]int{}, Handoffs{}
		for _, p := range procs {
			mergeRaw(merged, raws[p])
			perProc = append(perProc, raws[p].Completed)
			h = h.Add(handoffs[p])
		}
		merged.CSStartUnixMs = nil // hand-offs are counted across processes, above
		merged.WindowMs = unionWindow(raws, procs)
		spec := multiSpec(cfg, m, procs[0], time.Time{})
		spec.Impl, spec.Workers = impl, len(merged.Completed)
		sc := Scenario{Name: m.Name, Workers: spec.Workers, CriticalSection: m.CriticalSection, SharedKey: true}
		res := Summarize(sc, spec, merged)
		res.setHandoffs(h)
		res.Processes = len(procs)
		res.FairnessProcesses = ptr(round(JainOverProcesses(perProc), 4))
		if total > 0 {
			res.Share = ptr(round(float64(res.Ops)/float64(total), 3))
		}
		res.setCost(cost, merged.executes(), merged.jobs(spec), impl == BridgeName, len(procs) == len(raws))
		out = append(out, res)
	}
	return out
}

// unionWindow is the span from the first opening to the last closing of the processes'
// windows: with processes that opened together it is the window; with a late one the rates
// stay honest (never above what the key allowed).
func unionWindow(raws []*Raw, procs []int) float64 {
	first, last := math.Inf(1), math.Inf(-1)
	for _, p := range procs {
		first = min(first, raws[p].WindowStartUnixMs)
		last = max(last, raws[p].WindowStartUnixMs+raws[p].WindowMs)
	}
	if first > last {
		return 0
	}
	return last - first
}

// mergeRaw adds src's observations to dst, as if one process with all their workers had run.
// The window is the longest of them.
func mergeRaw(dst, src *Raw) {
	dst.Completed = append(dst.Completed, src.Completed...)
	dst.Timeouts += src.Timeouts
	dst.Errors += src.Errors
	if dst.FirstError == "" {
		dst.FirstError = src.FirstError
	}
	dst.WaitMs = append(dst.WaitMs, src.WaitMs...)
	dst.LatencyMs = append(dst.LatencyMs, src.LatencyMs...)
	dst.HoldMsSum += src.HoldMsSum
	dst.Overlaps += src.Overlaps
	dst.RedisMax = max(dst.RedisMax, src.RedisMax)
	dst.WindowMs = max(dst.WindowMs, src.WindowMs)
	dst.DrainMs = max(dst.DrainMs, src.DrainMs)
	dst.StartLateMs = max(dst.StartLateMs, src.StartLateMs)
	dst.CPUMs += src.CPUMs
	if dst.Runtime == "" {
		dst.Runtime = src.Runtime
	} else if !strings.Contains(dst.Runtime, src.Runtime) {
		dst.Runtime += ", " + src.Runtime
	}
}

// MultiRatios compares the multi-process scenarios with the all-stock one (BaselineMulti):
// for a scenario of one implementation X, "X_over_stock" divides its critical sections/s by the
// baseline's and "wait_p50/p99/p99_with_timeouts_X_over_stock" its waits; for a mix of X and
// stock, "X_over_stock" compares critical sections/s per process of X and of stock in the same
// run, and "stock_over_all_stock" divides stock's critical sections/s per process by the
// baseline's (the target: at least 0.5, stock never made worse than stock makes itself).
func MultiRatios(results []Result) map[string]map[string]*float64 {
	rows := map[string]map[string]Result{}
	for _, r := range results {
		if rows[r.Name] == nil {
			rows[r.Name] = map[string]Result{}
		}
		rows[r.Name][r.Impl] = r
	}
	base, ok := rows[BaselineMulti]["stock"]
	if !ok {
		return map[string]map[string]*float64{}
	}
	perProc := func(r Result) float64 { return r.Throughput() / float64(max(r.Processes, 1)) }
	out := map[string]map[string]*float64{}
	for name, impls := range rows {
		if name == BaselineMulti {
			continue
		}
		m := map[string]*float64{}
		stock, mixed := impls["stock"]
		for impl, r := range impls {
			if impl == "stock" || impl == "all" {
				continue
			}
			key := impl + "_over_stock"
			if mixed {
				m[key] = ratio(perProc(r), perProc(stock))
				continue
			}
			m[key] = ratio(r.Throughput(), base.Throughput())
			m["wait_p50_"+key] = ratio(r.WaitMs.P50, base.WaitMs.P50)
			m["wait_p99_"+key] = ratio(r.WaitMs.P99, base.WaitMs.P99)
			m["wait_p99_with_timeouts_"+key] = ratio(*r.WaitP99TimeoutsMs, *base.WaitP99TimeoutsMs)
		}
		if mixed {
			m["stock_over_all_stock"] = ratio(perProc(stock), perProc(base))
		}
		out[name] = m
	}
	return out
}
