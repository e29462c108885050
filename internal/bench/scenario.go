package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Scenario is one workload, run for the same duration by every implementation.
//
// Every worker loops until the measurement window ends: it calls execute on its key with a
// job, records the outcome, and calls again at once. A contended scenario (SharedKey) gives
// every worker the same key; its job is the critical section: enter (in-process in-flight
// counter + Redis INCR), sleep CriticalSection, exit (Redis DECR + in-flight counter). An
// uncontended scenario gives each worker its own key and an empty job.
type Scenario struct {
	// Name identifies the scenario in the report, e.g. "contended_8x1ms".
	Name string
	// Workers is the number of concurrent execute loops.
	Workers int
	// CriticalSection is how long each job holds the lock (contended scenarios only).
	CriticalSection time.Duration
	// SharedKey makes every worker lock one key; otherwise worker i locks its own key.
	SharedKey bool
}

// DefaultScenarios returns the four scenarios `make bench` runs.
func DefaultScenarios() []Scenario {
	return []Scenario{
		{Name: "uncontended_1", Workers: 1},
		{Name: "uncontended_50", Workers: 50},
		{Name: "contended_8x1ms", Workers: 8, CriticalSection: time.Millisecond, SharedKey: true},
		{Name: "contended_32x5ms", Workers: 32, CriticalSection: 5 * time.Millisecond, SharedKey: true},
	}
}

// SelectScenarios returns the default scenarios named in a comma-separated list ("" or "all":
// every one), or an error naming the unknown ones.
func SelectScenarios(list string) ([]Scenario, error) {
	all := DefaultScenarios()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []Scenario
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("scenario %q named twice", name)
		}
		seen[name] = true
		found := false
		for _, s := range all {
			if s.Name == name {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, scenarioNames(all))
		}
	}
	return out, nil
}

// Plan is what a run runs: single-process, multi-process and cluster scenarios.
type Plan struct {
	Scenarios []Scenario
	Multi     []MultiScenario
	Cluster   []Scenario
}

// SelectPlan returns the scenarios named in a comma-separated list, from every kind
// (DefaultScenarios, DefaultMultiScenarios, DefaultClusterScenarios); "" or "all" selects every
// one. It fails naming the unknown ones.
func SelectPlan(list string) (Plan, error) {
	all := Plan{Scenarios: DefaultScenarios(), Multi: DefaultMultiScenarios(), Cluster: DefaultClusterScenarios()}
	if list == "" || list == "all" {
		return all, nil
	}
	var out Plan
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return Plan{}, fmt.Errorf("scenario %q named twice", name)
		}
		seen[name] = true
		n := len(out.Scenarios) + len(out.Multi) + len(out.Cluster)
		for _, s := range all.Scenarios {
			if s.Name == name {
				out.Scenarios = append(out.Scenarios, s)
			}
		}
		for _, m := range all.Multi {
			if m.Name == name {
				out.Multi = append(out.Multi, m)
			}
		}
		for _, s := range all.Cluster {
			if s.Name == name {
				out.Cluster = append(out.Cluster, s)
			}
		}
		if len(out.Scenarios)+len(out.Multi)+len(out.Cluster) == n {
			return Plan{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(all.Names(), ", "))
		}
	}
	return out, nil
}

// Names lists the plan's scenario names in run order.
func (p Plan) Names() []string {
	var out []string
	for _, s := range p.Scenarios {
		out = append(out, s.Name)
	}
	for _, m := range p.Multi {
		out = append(out, m.Name)
	}
	for _, s := range p.Cluster {
		out = append(out, s.Name)
	}
	return out
}

func scenarioNames(ss []Scenario) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// Spec is one scenario as handed to one implementation: everything a runner needs, with the key
// names and Redis locations already chosen, so Go and Node runners need no naming logic. It is
// passed to Node runners as their JSON argument.
type Spec struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Workers  int    `json:"workers"`
	// Keys are the lock keys (without namespace); worker i locks Keys[i % len(Keys)].
	Keys []string `json:"keys"`
	// CSMs is the critical section in milliseconds; 0 means an empty job.
	CSMs       float64 `json:"cs_ms"`
	DurationMs float64 `json:"duration_ms"`
	// Warmup is the number of sequential executes on WarmupKey before the window opens; when
	// it is not 0 they are followed by one concurrent round, worker i on WarmupKey+":"+i (which
	// fills connection pools).
	Warmup    int    `json:"warmup"`
	WarmupKey string `json:"warmup_key"`
	// TimeoutS and ExpireS are execute's timeout and expire arguments, in seconds.
	TimeoutS float64 `json:"timeout_s"`
	ExpireS  float64 `json:"expire_s"`
	RedisURL string  `json:"redis_url"`
	// Namespace is the lock key prefix of the implementation (see Namespace); Keys, WarmupKey
	// and CounterKey start with the scenario's name.
	Namespace string `json:"namespace"`
	// CounterKey is the Redis key jobs INCR on entry and DECR on exit; "" for no counter.
	CounterKey string `json:"counter_key"`
	// KeepCounter leaves CounterKey alone after the warm-up (a multi-process scenario: the Go
	// side resets it once before any process starts); otherwise the runner deletes it.
	KeepCounter bool `json:"keep_counter,omitempty"`
	// Process is the runner's index among the processes of a multi-process scenario (0 in
	// single-process scenarios).
	Process int `json:"process"`
	// StartAtUnixMs, when not 0, is the wall-clock time (Unix milliseconds) at which the window
	// opens: after its warm-up the runner waits for it, so processes start together. A runner
	// that is not ready by then starts at once and reports how late it was.
	StartAtUnixMs float64 `json:"start_at_unix_ms,omitempty"`
	// Extra carries implementation-specific settings (e.g. a bridge URL) from NodeImpl.Setup.
	Extra map[string]any `json:"extra,omitempty"`
}

// Duration is DurationMs as a time.Duration.
func (s Spec) Duration() time.Duration {
	return time.Duration(s.DurationMs * float64(time.Millisecond))
}

// Raw is what a runner observed in one scenario. Metrics are computed from it by Summarize.
type Raw struct {
	// Completed counts, per worker, the executes that ran their job, returned without error and
	// returned before the window closed.
	Completed []int `json:"completed"`
	// Timeouts counts executes that failed with the timed-out conflict; Errors every other failure.
	Timeouts   int    `json:"timeouts"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// WaitMs has one sample per successful execute called in the window, including those that
	// finished while draining (so long waits across the window's end are not censored): from
	// calling execute to the job starting.
	WaitMs []float64 `json:"wait_ms"`
	// LatencyMs has one sample per successful execute, as WaitMs: from calling execute to its
	// return.
	LatencyMs []float64 `json:"latency_ms"`
	// HoldMsSum is the summed duration of the jobs of the executes counted in Completed. Those
	// jobs lie inside the window, so one key's HoldMsSum never exceeds WindowMs.
	HoldMsSum float64 `json:"hold_ms_sum"`
	// Overlaps counts job entries that found another job of this process in flight on the key.
	Overlaps int `json:"overlaps"`
	// RedisMax is the largest INCR reply seen on CounterKey (0 when there is no counter).
	RedisMax int64 `json:"redis_max"`
	// WindowMs is the measured window; DrainMs the time in-flight calls took to finish after it.
	WindowMs float64 `json:"window_ms"`
	DrainMs  float64 `json:"drain_ms"`
	// Runtime names the runtime that ran the scenario, e.g. "go1.26.8" or "node v20.20.2".
	Runtime string `json:"runtime"`
	// WindowStartUnixMs is when the window opened (wall clock, Unix milliseconds).
	WindowStartUnixMs float64 `json:"window_start_unix_ms"`
	// StartLateMs is how long after Spec.StartAtUnixMs the window opened (0 when on time).
	StartLateMs float64 `json:"start_late_ms,omitempty"`
	// CSStartUnixMs has, per worker, the wall-clock start (Unix milliseconds) of each of its jobs
	// in a contended scenario, the same jobs as WaitMs: their order across workers and
	// processes is the order the key passed in.
	CSStartUnixMs [][]float64 `json:"cs_start_unix_ms,omitempty"`
	// CPUMs is the runner process's CPU time (user + system) from the window's opening to the
	// end of the drain.
	CPUMs float64 `json:"cpu_ms"`
}

// Env is what implementations get when a run opens them.
type Env struct {
	// RedisURL is the server every implementation uses.
	RedisURL string
	// CompatDir is the compat/ directory holding node_modules and the bench scripts.
	CompatDir string
	// Log receives progress lines and child-process stderr.
	Log io.Writer
	// FairQueue turns the fair queue on (provider.Options.FairQueue, the bridge's
	// --fair-queue) for this project's implementations: Go, Go worker processes and the bridge.
	FairQueue bool

	// bridge, when set, is the run's one bridge server, shared by its bridge runners.
	bridge *sharedBridge
	// probe, when set, reads the counters of the run's Redis server (every master of a
	// cluster) and the keys it holds.
	probe *redisProbe
}

// bridgePid is the pid of the run's bridge server when bridge is set and one runs, else 0.
func (e Env) bridgePid(bridge bool) int {
	if !bridge || e.bridge == nil {
		return 0
	}
	if b := e.bridge.server(); b != nil {
		return b.Pid()
	}
	return 0
}

// Impl is one lock implementation under test.
type Impl interface {
	// Name is the implementation's name in the report ("go", "stock", "bridge", a peer's).
	Name() string
	// Open checks prerequisites (fail fast, with an install hint) and prepares for a run.
	Open(ctx context.Context, env Env) (Runner, error)
}

// Runner runs scenarios for one opened implementation.
type Runner interface {
	// Run runs one scenario and returns what it observed.
	Run(ctx context.Context, spec Spec) (*Raw, error)
	// Close releases what Open acquired.
	Close() error
}

// Implementations lists every implementation, in report order: the Go provider in-process,
// stock @medusajs/locking-redis in Node, the bridge client in Node talking to a Go bridge
// started for the run (see StartBridge), then the peers in-process (see Peers). Add another one
// here.
func Implementations() []Impl {
	return append([]Impl{
		GoImpl{},
		NodeImpl{ImplName: "stock", Script: "bench/stock-bench.js"},
		bridgeImpl(),
	}, Peers()...)
}

// SelectImpls returns the implementations named in a comma-separated list ("" or "all": every
// one), or an error naming the unknown ones.
func SelectImpls(list string) ([]Impl, error) {
	all := Implementations()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []Impl
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("implementation %q named twice", name)
		}
		seen[name] = true
		found := false
		for _, im := range all {
			if im.Name() == name {
				out = append(out, im)
				found = true
			}
		}
		if !found {
			known := make([]string, len(all))
			for i, im := range all {
				known[i] = im.Name()
			}
			return nil, fmt.Errorf("unknown implementation %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return out, nil
}
