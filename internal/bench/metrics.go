package bench

import (
	"math"
	"slices"
)

// MetricsDoc defines every number in the report. Go and Node runners only record raw
// observations (Raw); Summarize computes these metrics for all of them in one place.
var MetricsDoc = map[string]string{
	"window":                        "each run measures a fixed window (--duration) after a warm-up (--warmup sequential executes, then one concurrent execute per worker); workers start together, call execute in a loop until the window closes (at least once each), then finish their in-flight call (drain_ms, not part of the window)",
	"ops":                           "executes that ran their job, returned without error and returned inside the window",
	"ops_per_s":                     "uncontended: ops / window seconds",
	"latency_ms":                    "uncontended: time from calling execute to its return, over every successful execute called in the window (also those returning while draining, so count can exceed ops); p50/p99 are nearest-rank percentiles (the ceil(p/100*n)-th smallest sample), max the largest",
	"cs_per_s":                      "contended: critical sections completed per second (ops / window seconds); each op is one critical section",
	"ideal_cs_per_s":                "contended: 1000 / cs_ms, the rate if the lock passed between workers instantly",
	"efficiency":                    "contended: cs_per_s / ideal_cs_per_s (the critical section also includes a Redis INCR and DECR, so 1.0 is not reachable)",
	"wait_ms":                       "contended: time from calling execute to the job starting, over every successful execute called in the window (also those that got the lock while draining, so waits spanning the window's end are not lost; count can exceed ops); p50/p99 nearest-rank, max the largest. A polling lock lets the releasing worker take the key again at once, so p50 is small and the tail long",
	"hold_ms_mean":                  "contended: mean measured job duration (INCR + sleep cs_ms + DECR), over the critical sections counted in cs_per_s (those that ended inside the window)",
	"fairness":                      "Jain's fairness index over the workers' ops counts: (sum x)^2 / (n * sum x^2); 1 = every worker completed the same number, 1/n = one worker did everything; 0 when nothing completed",
	"overlaps":                      "job entries that found another job of the same process inside the critical section of the same key (in-process detector); must be 0",
	"redis_max_in_cs":               "contended: largest reply of the Redis INCR each job runs on entry (DECR on exit); more than 1 means two holders overlapped, across processes too; must be 1",
	"timeouts":                      "executes that failed with the timed-out conflict (\"Timed-out acquiring lock.\") after timeout_s; the worker goes on",
	"errors":                        "executes that failed otherwise (first_error shows one); the worker stops",
	"ratios":                        "single-process scenarios: per scenario, <impl>_over_stock is the implementation's throughput (ops_per_s or cs_per_s) divided by stock's: above 1 is faster; wait_p50/p99_<impl>_over_stock divide wait percentiles: below 1 is shorter waits; null when stock's value is 0",
	"implementations":               "go: the Go provider in-process, stock defaults, on a go-redis client from redisconn.Open (pool of 10 connections per GOMAXPROCS); stock: @medusajs/locking-redis built by its own loader in one Node child process (one ioredis connection); bridge: the @locktui/medusa-locking-bridge client (createBridgeLockingProvider, one WebSocket connection) in one Node child process, talking to a Go bridge (cmd/bridge, built and started for the run on loopback, its own go-redis pool) that runs the Go provider; the bridge runs with --events=false, so publishing lock events for the console is not measured; redislock, redsync, bare: the peers (see peers), in-process on the Go runner's clients; all run the same worker loop (compat/bench/harness.js mirrors internal/bench/gorunner.go), one implementation at a time, alternating per scenario",
	"peers":                         "single-process scenarios only, in the default run (--impl without them leaves them out): redislock is github.com/bsm/redislock (Obtain: a script running SET NX PX, retried with its ExponentialBackoff from 16 ms to 1 s, stock's maximum retry interval, until the execute timeout; Release: a script running GET and DEL); redsync is github.com/go-redsync/redsync/v4 with one pool (a mutex per execute; LockContext: SET NX PX, a failed try also running its delete script, with its default random 50–250 ms delay between tries and enough tries to last the timeout; UnlockContext: the delete script, GET and DEL); bare is the leanest lock (SET key token NX PX, retried every 1–5 ms at random until the timeout; release: a compare-and-delete script, GET and DEL). All use a go-redis client from redisconn.Open, as the Go provider does, take the lock for expire_s, and run the same job",
	"lock_busy":                     "contended: cs_per_s × hold_ms_mean / 1000, the share of the window the key was held (the hold includes the bench's INCR and DECR): the summed holds of the sections that ended inside the window, over the window, so without overlaps it cannot exceed 100 %; in a mixed multi-process scenario each implementation's row counts its own critical sections, the all row the key's",
	"wait_p99_with_timeouts_ms":     "contended: the nearest-rank p99 of wait_ms after adding one wait of the whole timeout (timeout_s) per timed-out call: plain p99 leaves out the calls that starved",
	"handoffs":                      "contended: the critical sections that started inside the window, ordered by their start (wall clock, shared by every process on the machine; critical sections on one key never overlap), each consecutive pair one hand-off charged to the earlier section's worker: total, same_worker (the releasing worker took the key straight back), same_process; handoff_same_worker = same_worker / total",
	"multi_process":                 "4 processes × 4 workers on one key, 2 ms critical sections, a window of multi_duration_ms (default 10 s, twice the execute timeout, so a starved call can time out inside it), every process opening its window at the same wall-clock time (start_at; start_late_ms says by how much one missed it): multi_stock (the baseline), multi_go, multi_go_stock (2 + 2), multi_bridge, multi_bridge_stock (2 + 2); Go processes are Go worker processes (this program with LOCKTUI_BENCH_WORKER=1), bridge processes share one bridge server; the keys are in the bridge's namespace (fixed when it starts) so every process locks the same Redis key; a row per implementation (its processes together) and, for mixed scenarios, an all row; window_ms is the span from the first process's opening to the last one's closing",
	"fairness_processes":            "multi-process: Jain's index over the processes' completed critical sections",
	"share":                         "multi-process: the implementation's share of the scenario's critical sections",
	"cpu_ms_per_1k_executes":        "the runner processes' CPU time (user + system: getrusage for Go, process.cpuUsage() for Node) from the window's opening to the end of the drain, per 1,000 execute calls made in the window (successful, timed out or failed); an in-process runner's (go, the peers) is the bench process's",
	"bridge_cpu_ms_per_1k_executes": "bridge: the bridge server's CPU time (utime + stime from /proc/<pid>/stat, 10 ms steps) over the same span, per 1,000 executes of the bridge clients it served",
	"redis_cpu_ms_per_1k_executes":  "the Redis server's CPU time (INFO cpu: used_cpu_sys + used_cpu_user, summed over the three masters on the cluster) over the same span, per 1,000 executes; in a mixed multi-process scenario only on the all row, since one server serves every implementation",
	"redis_commands_per_execute":    "the commands Redis ran over the same span (INFO commandstats, calls + rejected_calls of every command; a script's EVALSHA or EVAL and each command the script called count one each, so an execute of two scripts calling two commands each is 6), per execute, less the bench's own: its INFO calls (the counters' reads; ioredis's ready check) and one INCR and one DECR per successful execute of a contended scenario (the job's counter). Polling locks pay for every failed attempt here; same rows as redis_cpu_ms_per_1k_executes",
	"redis_commands":                "the commands of redis_commands_per_execute one by one, calls per execute, the jobs' INCR and DECR included (INFO left out)",
	"keys_left":                     "the keys that were not in Redis before the run (its warm-up included) and are there once every execute of the run returned, so every lock is released: a SCAN of the whole server (every master on the cluster), the bench's counters left out; keys_left_without_ttl is how many of them never expire, keys_left_sample up to 5 of their names; same rows as redis_cpu_ms_per_1k_executes",
	"machine_busy":                  "the share of the CPU time the machine had (every core, from /proc/stat, less steal) that it spent busy over the same span: near 1.0 the run was bound by the CPU the runners, the bridge and Redis share, and then a rate can only rise by spending less CPU per execute",
	"machine_steal":                 "the share of the machine's CPU time over the same span that the hypervisor gave to other machines while this one wanted to run (steal in /proc/stat): the noise of a shared virtual machine; runs with different steal are not comparable, ratios inside one scenario's adjacent runs are less affected",
	"multi_ratios":                  "multi_<impl>: <impl>_over_stock divides critical sections/s (and wait_p50/p99/p99_with_timeouts) by multi_stock's; multi_<impl>_stock: <impl>_over_stock compares critical sections/s per process of <impl> and of stock in the same run, stock_over_all_stock divides stock's per process by multi_stock's per process (target: at least 0.5)",
	"cluster":                       "cluster_<scenario>: the scenario on a local Redis Cluster of 3 masters (redis-server in cluster mode on free loopback ports, slots split evenly), Go provider in-process on a go-redis cluster client, and the bridge client through a bridge of its own on the cluster (the harness's counter is an ioredis Redis.Cluster there); <impl>_over_<impl>_standalone divides the throughput by the same scenario's on the single server in the same run; cluster_notes say why stock is not run there",
	"environment_noise":             "a shared 2-core machine is noisy: compare ratios from one run, not absolute numbers across runs",
}

// Quantiles summarise a set of samples, in milliseconds.
type Quantiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Result is one scenario run by one implementation, with its metrics (see MetricsDoc).
// Fields that apply only to uncontended or only to contended scenarios are omitted otherwise.
type Result struct {
	Name     string  `json:"name"`
	Impl     string  `json:"impl"`
	Kind     string  `json:"kind"` // "uncontended" or "contended"
	Workers  int     `json:"workers"`
	Keys     int     `json:"keys"`
	CSMs     float64 `json:"cs_ms"`
	WindowMs float64 `json:"window_ms"`
	Ops      int     `json:"ops"`

	OpsPerS   *float64   `json:"ops_per_s,omitempty"`
	LatencyMs *Quantiles `json:"latency_ms,omitempty"`

	CSPerS       *float64   `json:"cs_per_s,omitempty"`
	IdealCSPerS  *float64   `json:"ideal_cs_per_s,omitempty"`
	Efficiency   *float64   `json:"efficiency,omitempty"`
	WaitMs       *Quantiles `json:"wait_ms,omitempty"`
	HoldMsMean   *float64   `json:"hold_ms_mean,omitempty"`
	RedisMaxInCS *int64     `json:"redis_max_in_cs,omitempty"`

	// LockBusy is cs_per_s × hold_ms_mean / 1000: the share of the window the key was held.
	LockBusy *float64 `json:"lock_busy,omitempty"`
	// WaitP99TimeoutsMs is the p99 of wait_ms with every timed-out call counted as a wait of
	// the whole timeout.
	WaitP99TimeoutsMs *float64 `json:"wait_p99_with_timeouts_ms,omitempty"`
	// Handoffs counts the hand-offs this implementation's workers made; HandoffSameWorker is
	// the share that went back to the releasing worker.
	Handoffs          *Handoffs `json:"handoffs,omitempty"`
	HandoffSameWorker *float64  `json:"handoff_same_worker,omitempty"`

	// Processes, FairnessProcesses and Share are set in multi-process scenarios: how many
	// processes ran this implementation, Jain's index over their totals, and their share of
	// the scenario's critical sections.
	Processes         int      `json:"processes,omitempty"`
	FairnessProcesses *float64 `json:"fairness_processes,omitempty"`
	Share             *float64 `json:"share,omitempty"`

	// CPUMsPer1k is the runner processes' CPU time per 1,000 executes (window and drain);
	// BridgeCPUMsPer1k the bridge server's, for the bridge; RedisCPUMsPer1k the Redis
	// server's; MachineBusy the share of the CPU time the machine had that it spent busy
	// meanwhile, MachineSteal the share the hypervisor took (see MetricsDoc).
	CPUMsPer1k       *float64 `json:"cpu_ms_per_1k_executes,omitempty"`
	BridgeCPUMsPer1k *float64 `json:"bridge_cpu_ms_per_1k_executes,omitempty"`
	RedisCPUMsPer1k  *float64 `json:"redis_cpu_ms_per_1k_executes,omitempty"`
	MachineBusy      *float64 `json:"machine_busy,omitempty"`
	MachineSteal     *float64 `json:"machine_steal,omitempty"`
	// RedisCmdsPerExec is the commands the locks made Redis run per execute (INFO
	// commandstats: the scripts' commands counted besides their EVALSHA), the bench's own left
	// out; RedisCmds has every command's calls per execute, the jobs' INCR and DECR included.
	RedisCmdsPerExec *float64           `json:"redis_commands_per_execute,omitempty"`
	RedisCmds        map[string]float64 `json:"redis_commands,omitempty"`
	// KeysLeft is how many keys the run left in Redis once every execute returned (the bench's
	// counters not counted), KeysLeftNoTTL how many of them never expire, KeysLeftSample a few
	// of their names.
	KeysLeft       *int     `json:"keys_left,omitempty"`
	KeysLeftNoTTL  *int     `json:"keys_left_without_ttl,omitempty"`
	KeysLeftSample []string `json:"keys_left_sample,omitempty"`
	// StartLateMs is how late the latest of its processes opened its window (0: together).
	StartLateMs float64 `json:"start_late_ms,omitempty"`

	Fairness   float64 `json:"fairness"`
	Overlaps   int     `json:"overlaps"`
	Timeouts   int     `json:"timeouts"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	DrainMs    float64 `json:"drain_ms"`
	Runtime    string  `json:"runtime"`
}

// Contended reports whether r is a contended scenario.
func (r Result) Contended() bool { return r.Kind == "contended" }

// Throughput is ops_per_s or cs_per_s, whichever the scenario has.
func (r Result) Throughput() float64 {
	switch {
	case r.OpsPerS != nil:
		return *r.OpsPerS
	case r.CSPerS != nil:
		return *r.CSPerS
	}
	return 0
}

// samples is the number of successful executes, inside the window or while draining.
func (r Result) samples() int {
	switch {
	case r.LatencyMs != nil:
		return r.LatencyMs.Count
	case r.WaitMs != nil:
		return r.WaitMs.Count
	}
	return 0
}

// Summarize computes the metrics of one run from its raw observations.
func Summarize(sc Scenario, spec Spec, raw *Raw) Result {
	ops := 0
	for _, c := range raw.Completed {
		ops += c
	}
	res := Result{
		Name:       sc.Name,
		Impl:       spec.Impl,
		Kind:       "uncontended",
		Workers:    spec.Workers,
		Keys:       len(spec.Keys),
		CSMs:       spec.CSMs,
		WindowMs:   round(raw.WindowMs, 1),
		Ops:        ops,
		Fairness:   round(Jain(raw.Completed), 4),
		Overlaps:   raw.Overlaps,
		Timeouts:   raw.Timeouts,
		Errors:     raw.Errors,
		FirstError: raw.FirstError,
		DrainMs:    round(raw.DrainMs, 1),
		Runtime:    raw.Runtime,
	}
	rate := 0.0
	if raw.WindowMs > 0 {
		rate = float64(ops) / (raw.WindowMs / 1000)
	}
	if calls := raw.executes(); calls > 0 && raw.CPUMs > 0 {
		res.CPUMsPer1k = ptr(round(raw.CPUMs/float64(calls)*1000, 1))
	}
	res.StartLateMs = round(raw.StartLateMs, 1)
	if !sc.SharedKey {
		res.OpsPerS = ptr(round(rate, 1))
		res.LatencyMs = quantiles(raw.LatencyMs)
		return res
	}
	res.Kind = "contended"
	res.CSPerS = ptr(round(rate, 1))
	if spec.CSMs > 0 {
		ideal := 1000 / spec.CSMs
		res.IdealCSPerS = ptr(round(ideal, 1))
		res.Efficiency = ptr(round(rate/ideal, 3))
	}
	res.WaitMs = quantiles(raw.WaitMs)
	hold := 0.0
	if ops > 0 {
		hold = raw.HoldMsSum / float64(ops)
	}
	res.HoldMsMean = ptr(round(hold, 3))
	res.LockBusy = ptr(round(rate*hold/1000, 3))
	res.WaitP99TimeoutsMs = ptr(round(P99WithTimeouts(raw.WaitMs, raw.Timeouts, spec.TimeoutS*1000), 3))
	if raw.CSStartUnixMs != nil {
		h := CountHandoffs(raw.sections(0))[0]
		res.setHandoffs(h)
	}
	res.RedisMaxInCS = ptr(raw.RedisMax)
	return res
}

func (r *Result) setHandoffs(h Handoffs) {
	r.Handoffs = &h
	r.HandoffSameWorker = h.SameWorkerShare()
}

// executes is the number of execute calls made in the window (and finished while draining).
func (raw *Raw) executes() int { return len(raw.WaitMs) + raw.Timeouts + raw.Errors }

// jobs is the number of those executes whose job ran the counter's INCR and DECR: every
// successful one when the spec has a counter, else none.
func (raw *Raw) jobs(spec Spec) int {
	if spec.CounterKey == "" {
		return 0
	}
	return len(raw.WaitMs)
}

// sections are the raw's critical sections that started inside its window, as process proc's.
func (raw *Raw) sections(proc int) []Section {
	var out []Section
	end := raw.WindowStartUnixMs + raw.WindowMs
	for w, starts := range raw.CSStartUnixMs {
		for _, t := range starts {
			if t >= raw.WindowStartUnixMs && t <= end {
				out = append(out, Section{StartMs: t, Proc: proc, Worker: w})
			}
		}
	}
	return out
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted samples: the
// ceil(p/100*n)-th smallest. It returns 0 for no samples.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Jain returns Jain's fairness index of counts, (Σx)² / (n·Σx²): 1 when all are equal, 1/n when
// one has everything, and 0 when all are zero or there are none.
func Jain(counts []int) float64 {
	var sum, sumSq float64
	for _, c := range counts {
		x := float64(c)
		sum += x
		sumSq += x * x
	}
	if sumSq == 0 {
		return 0
	}
	return sum * sum / (float64(len(counts)) * sumSq)
}

func quantiles(samples []float64) *Quantiles {
	s := slices.Clone(samples)
	slices.Sort(s)
	q := &Quantiles{Count: len(s)}
	if len(s) > 0 {
		q.P50 = round(Percentile(s, 50), 3)
		q.P99 = round(Percentile(s, 99), 3)
		q.Max = round(s[len(s)-1], 3)
	}
	return q
}

// Ratios compares every implementation with baseline per scenario: "<impl>_over_<baseline>" is
// the throughput ratio and, for contended scenarios, "wait_p50_…"/"wait_p99_…" the wait ratios.
// A ratio whose denominator is zero is nil (JSON null).
func Ratios(results []Result, baseline string) map[string]map[string]*float64 {
	out := map[string]map[string]*float64{}
	base := map[string]Result{}
	for _, r := range results {
		if r.Impl == baseline {
			base[r.Name] = r
		}
	}
	for _, r := range results {
		b, ok := base[r.Name]
		if !ok || r.Impl == baseline {
			continue
		}
		m := out[r.Name]
		if m == nil {
			m = map[string]*float64{}
			out[r.Name] = m
		}
		suffix := r.Impl + "_over_" + baseline
		m[suffix] = ratio(r.Throughput(), b.Throughput())
		if r.WaitMs != nil && b.WaitMs != nil {
			m["wait_p50_"+suffix] = ratio(r.WaitMs.P50, b.WaitMs.P50)
			m["wait_p99_"+suffix] = ratio(r.WaitMs.P99, b.WaitMs.P99)
		}
	}
	return out
}

func ratio(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	return ptr(round(a/b, 3))
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func ptr[T any](v T) *T { return &v }

// Section is one critical section in a contended run: when its job started (wall clock, Unix
// milliseconds, shared by every process on the machine) and which worker of which process ran
// it.
type Section struct {
	StartMs float64
	Proc    int
	Worker  int
}

// Handoffs counts the hand-offs that the workers of one process made: how often the key went
// from one of its critical sections to the next one, and how often that next one was the same
// worker's (the releasing worker took the key straight back) or another worker of the same
// process.
type Handoffs struct {
	Total       int `json:"total"`
	SameWorker  int `json:"same_worker"`
	SameProcess int `json:"same_process"`
}

// Add returns the sum of h and o.
func (h Handoffs) Add(o Handoffs) Handoffs {
	return Handoffs{Total: h.Total + o.Total, SameWorker: h.SameWorker + o.SameWorker, SameProcess: h.SameProcess + o.SameProcess}
}

// SameWorkerShare is SameWorker / Total, or nil without hand-offs.
func (h Handoffs) SameWorkerShare() *float64 {
	if h.Total == 0 {
		return nil
	}
	return ptr(round(float64(h.SameWorker)/float64(h.Total), 3))
}

// CountHandoffs orders sections by start (critical sections on one key never overlap, so their
// start order is the order the key passed in) and counts each consecutive pair as a hand-off of
// the earlier section's process, keyed by that process.
func CountHandoffs(sections []Section) map[int]Handoffs {
	s := slices.Clone(sections)
	slices.SortStableFunc(s, func(a, b Section) int {
		switch {
		case a.StartMs < b.StartMs:
			return -1
		case a.StartMs > b.StartMs:
			return 1
		}
		return 0
	})
	out := map[int]Handoffs{}
	for i := 1; i < len(s); i++ {
		prev, next := s[i-1], s[i]
		h := out[prev.Proc]
		h.Total++
		if prev.Proc == next.Proc {
			h.SameProcess++
			if prev.Worker == next.Worker {
				h.SameWorker++
			}
		}
		out[prev.Proc] = h
	}
	return out
}

// JainOverProcesses is Jain's index over the processes' totals: perProcess[p] holds the counts
// of process p's workers.
func JainOverProcesses(perProcess [][]int) float64 {
	totals := make([]int, len(perProcess))
	for p, counts := range perProcess {
		for _, c := range counts {
			totals[p] += c
		}
	}
	return Jain(totals)
}

// P99WithTimeouts is the nearest-rank p99 of waits (milliseconds) after adding one wait of
// timeoutMs for each of the timeouts calls that gave up: a call that timed out waited the whole
// timeout, and leaving it out hides starvation.
func P99WithTimeouts(waits []float64, timeouts int, timeoutMs float64) float64 {
	s := make([]float64, 0, len(waits)+timeouts)
	s = append(s, waits...)
	for range timeouts {
		s = append(s, timeoutMs)
	}
	slices.Sort(s)
	return Percentile(s, 99)
}
