package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locktui/locktui/redisconn"
)

// Baseline is the implementation every ratio divides by.
const Baseline = "stock"

// Defaults of Config and of the --quick smoke test.
const (
	// DefaultDuration is each scenario's window per implementation.
	DefaultDuration = 3 * time.Second
	// QuickDuration is the window of a --quick smoke test.
	QuickDuration = 250 * time.Millisecond
	// DefaultMultiDuration is each multi-process scenario's window: twice stock's execute
	// timeout, so a call that starves can time out inside it (with a window shorter than the
	// timeout, starvation shows only as long waits).
	DefaultMultiDuration = 10 * time.Second
	// DefaultWarmup is the number of sequential executes before each window (then one
	// concurrent round, one execute per worker).
	DefaultWarmup = 50
	// QuickWarmup is DefaultWarmup for a --quick smoke test.
	QuickWarmup = 5
	// DefaultExecTimeout is execute's acquisition timeout: stock's waitLockingTimeout.
	DefaultExecTimeout = 5 * time.Second
	// DefaultExecExpire is execute's lease: stock's default.
	DefaultExecExpire = 60 * time.Second
)

const (
	namespacePrefix      = "locktui_bench:"
	counterPrefix        = "locktui_bench_counter:"
	warmupKey            = "warmup"
	sharedKey            = "hot"
	perWorkerKeyTemplate = "k%d"
)

// Config is one benchmark run. The zero value of every field but RedisURL and CompatDir means
// its default.
type Config struct {
	// RedisURL is the server every implementation uses (a private one: the run writes keys).
	RedisURL string
	// CompatDir is the compat/ directory (see nodeproc.FindCompatDir); needed by Node implementations.
	CompatDir string
	// Duration is each scenario's measurement window per implementation; default 3 s.
	Duration time.Duration
	// MultiDuration is each multi-process scenario's window; default DefaultMultiDuration.
	MultiDuration time.Duration
	// Warmup is the number of sequential executes before each window; 0 means the default
	// (50), a negative value none.
	Warmup int
	// Timeout and Expire are execute's arguments; defaults 5 s and 60 s, as stock.
	Timeout time.Duration
	Expire  time.Duration
	// Scenarios are the single-process scenarios, Multi the multi-process ones (run for the
	// implementations among Impls only) and Cluster the scenarios run on a local Redis Cluster
	// (3 masters, started by Run; Go only, see ClusterNotes). When all three are empty, Run runs
	// DefaultScenarios, DefaultMultiScenarios and DefaultClusterScenarios. Impls default to
	// Implementations.
	Scenarios []Scenario
	Multi     []MultiScenario
	Cluster   []Scenario
	Impls     []Impl
	// GoWorker is the command that starts a Go worker process (see GoProcessImpl); default
	// this program.
	GoWorker []string
	// Log receives progress; default io.Discard.
	Log io.Writer
	// FairQueue runs this project's implementations with the fair queue on (Env.FairQueue).
	FairQueue bool
}

func (c Config) withDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.MultiDuration <= 0 {
		c.MultiDuration = DefaultMultiDuration
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = DefaultWarmup
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultExecTimeout
	}
	if c.Expire <= 0 {
		c.Expire = DefaultExecExpire
	}
	if len(c.Scenarios) == 0 && len(c.Multi) == 0 && len(c.Cluster) == 0 {
		c.Scenarios = DefaultScenarios()
		c.Multi = DefaultMultiScenarios()
		c.Cluster = DefaultClusterScenarios()
	}
	if len(c.Impls) == 0 {
		c.Impls = Implementations()
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	c.Log = &syncWriter{w: c.Log}
	return c
}

// Environment describes where the run happened.
type Environment struct {
	Go         string            `json:"go"`
	Node       string            `json:"node,omitempty"`
	Redis      string            `json:"redis"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	Cores      int               `json:"cores"`
	OS         string            `json:"os"`
	Arch       string            `json:"arch"`
	Packages   map[string]string `json:"packages,omitempty"`
}

// Settings are the run's parameters.
type Settings struct {
	DurationMs      float64  `json:"duration_ms"`
	MultiDurationMs float64  `json:"multi_duration_ms"`
	Warmup          int      `json:"warmup"`
	TimeoutS        float64  `json:"timeout_s"`
	ExpireS         float64  `json:"expire_s"`
	Impls           []string `json:"impls"`
	Baseline        string   `json:"baseline"`
}

// Report is the JSON document `make bench` prints.
type Report struct {
	Redis     string      `json:"redis"`
	Env       Environment `json:"env"`
	Settings  Settings    `json:"settings"`
	Scenarios []Result    `json:"scenarios"`
	// MultiProcess has the rows of the multi-process scenarios: one per implementation and
	// scenario, and an "all" row per mixed scenario.
	MultiProcess []Result `json:"multi_process,omitempty"`
	// Cluster has the rows of the scenarios run on the local Redis Cluster; ClusterNotes says
	// which implementations it leaves out and why.
	Cluster      []Result                       `json:"cluster,omitempty"`
	ClusterNotes []string                       `json:"cluster_notes,omitempty"`
	Ratios       map[string]map[string]*float64 `json:"ratios"`
	MetricsDoc   map[string]string              `json:"metrics_doc"`
	// Problems lists correctness failures (overlaps, errors); empty on a good run.
	Problems []string `json:"problems"`
}

// Run runs every scenario with every implementation, one after the other (for each scenario,
// each implementation in turn, so the runs compared by a ratio are adjacent in time), and
// returns the report. A correctness failure is reported in Report.Problems, not as an error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	env := Env{RedisURL: cfg.RedisURL, CompatDir: cfg.CompatDir, Log: cfg.Log, FairQueue: cfg.FairQueue}
	rep := &Report{
		Env: Environment{
			Go: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), Cores: runtime.NumCPU(),
			OS: runtime.GOOS, Arch: runtime.GOARCH,
			Node: nodeVersion(ctx),
			Packages: packageVersions(cfg.CompatDir,
				"@medusajs/locking-redis", "@medusajs/framework", "ioredis", "ws"),
		},
		Settings: Settings{
			DurationMs: ms(cfg.Duration), MultiDurationMs: ms(cfg.MultiDuration), Warmup: cfg.Warmup,
			TimeoutS: cfg.Timeout.Seconds(), ExpireS: cfg.Expire.Seconds(), Baseline: Baseline,
		},
		MetricsDoc: MetricsDoc,
		Problems:   []string{},
	}
	if name, version := localPackageVersion(filepath.Join(cfg.CompatDir, bridgeClientDir)); version != "" {
		rep.Env.Packages[name] = version
	}
	version, err := redisServer(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	rep.Redis, rep.Env.Redis = version, version
	probe, err := openProbe(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	defer probe.close()
	env.probe = probe

	// One bridge server for every bridge runner of the run; stopped after them (defers run in
	// reverse order).
	env.bridge = &sharedBridge{}
	defer func() {
		if err := env.bridge.stop(); err != nil {
			fmt.Fprintf(cfg.Log, "bench: warning: %v\n", err)
		}
	}()
	multi := selectMulti(cfg.Multi, cfg.Impls)
	var (
		runners   []Runner
		procs     map[string][]Runner
		closePool = func() {}
		openErrs  [2]error
		wg        sync.WaitGroup
	)
	if len(cfg.Scenarios) > 0 { // only multi-process or cluster scenarios: no single runners
		wg.Go(func() { runners, openErrs[0] = openAll(ctx, cfg.Impls, env) })
	}
	wg.Go(func() { procs, closePool, openErrs[1] = openPool(ctx, cfg, multi, env) })
	wg.Wait()
	if runners != nil {
		defer closeAll(cfg.Impls, runners, cfg.Log)
	}
	defer closePool()
	if err := errors.Join(openErrs[:]...); err != nil {
		return nil, err
	}
	for _, im := range cfg.Impls {
		rep.Settings.Impls = append(rep.Settings.Impls, im.Name())
	}

	for _, sc := range cfg.Scenarios {
		for i, im := range cfg.Impls {
			res, err := runSingle(ctx, cfg, sc, im.Name(), runners[i], env)
			if err != nil {
				return nil, err
			}
			rep.Scenarios = append(rep.Scenarios, res)
			rep.Problems = append(rep.Problems, problems(res)...)
			fmt.Fprintln(cfg.Log, progressLine(res))
		}
	}
	for _, m := range multi {
		raws, cpu, err := runMulti(ctx, cfg, m, procs, env)
		if err != nil {
			return nil, err
		}
		for p, raw := range raws {
			if raw.StartLateMs > lateWarning {
				fmt.Fprintf(cfg.Log, "bench: warning: %s: process %d (%s) opened its window %.1f ms late\n", m.Name, p, m.Processes[p], raw.StartLateMs)
			}
		}
		for _, res := range SummarizeMulti(cfg, m, raws, cpu) {
			rep.MultiProcess = append(rep.MultiProcess, res)
			rep.Problems = append(rep.Problems, problems(res)...)
			fmt.Fprintln(cfg.Log, progressLine(res))
		}
	}
	if len(cfg.Cluster) > 0 && slices.ContainsFunc(cfg.Impls, func(im Impl) bool { return im.Name() == "go" }) {
		results, notes, err := runCluster(ctx, cfg)
		if err != nil {
			return nil, err
		}
		rep.ClusterNotes = notes
		for _, res := range results {
			rep.Cluster = append(rep.Cluster, res)
			rep.Problems = append(rep.Problems, problems(res)...)
			fmt.Fprintln(cfg.Log, progressLine(res))
		}
	}
	rep.Ratios = Ratios(rep.Scenarios, Baseline)
	maps.Copy(rep.Ratios, MultiRatios(rep.MultiProcess))
	maps.Copy(rep.Ratios, ClusterRatios(rep.Cluster, rep.Scenarios))
	return rep, nil
}

// lateWarning is how late a process of a multi-process scenario may open its window before Run
// warns that the processes did not start together.
const lateWarning = 5.0 // ms

// singleStartMargin is how far ahead of sending a single-process scenario its window opens
// (Spec.StartAtUnixMs), so the bridge server's CPU can be read at the opening.
const singleStartMargin = 500 * time.Millisecond

// runSingle runs one single-process scenario with one implementation and summarises it; it
// also measures the Redis server's CPU and commands, the bridge server's CPU for the bridge, how
// busy the machine was over the window, and the keys the run left in Redis.
func runSingle(ctx context.Context, cfg Config, sc Scenario, impl string, r Runner, env Env) (Result, error) {
	spec := makeSpec(cfg, sc, impl)
	keys := env.probe.trackKeys(ctx)
	startAt := time.Now().Add(singleStartMargin)
	spec.StartAtUnixMs = unixMs(startAt)
	bridge := impl == BridgeName
	cost := measureWindow(ctx, env.bridgePid(bridge), env.probe, startAt)
	raw, err := r.Run(ctx, spec)
	if err != nil {
		return Result{}, fmt.Errorf("%s with %s: %w", sc.Name, impl, err)
	}
	use := cost()
	var keysErr error
	if use.keys, use.keysOK, keysErr = keys(); keysErr != nil {
		fmt.Fprintf(cfg.Log, "bench: warning: %s with %s: the keys left: %v\n", sc.Name, impl, keysErr)
	}
	res := Summarize(sc, spec, raw)
	res.setCost(use, raw.executes(), raw.jobs(spec), bridge, true)
	return res, nil
}

// openAll opens every implementation at once (their start-ups, such as loading Node modules
// or building the bridge, take seconds each and never overlap a measurement: Run starts
// measuring once all are open). When one fails, the start-ups still going on are cut short,
// the opened runners are closed and that first failure is returned. ctx only bounds the
// opening: runners do not keep it.
func openAll(ctx context.Context, impls []Impl, env Env) ([]Runner, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runners := make([]Runner, len(impls))
	var (
		mu    sync.Mutex
		first error
	)
	var wg sync.WaitGroup
	for i, im := range impls {
		wg.Go(func() {
			r, err := im.Open(ctx, env)
			runners[i] = r
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				if first == nil {
					first = err
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		closeAll(impls, runners, env.Log)
		return nil, first
	}
	return runners, nil
}

// closeAll closes the opened runners; a runner that does not close cleanly (a child process
// that failed, a bridge that did not shut down gracefully) is reported to log.
func closeAll(impls []Impl, runners []Runner, log io.Writer) {
	for i, r := range runners {
		if r == nil {
			continue
		}
		if err := r.Close(); err != nil {
			fmt.Fprintf(log, "bench: warning: closing %s: %v\n", impls[i].Name(), err)
		}
	}
}

// makeSpec names the keys of one scenario for one implementation: a namespace per
// implementation and key names per scenario, so runs never see each other's locks.
func makeSpec(cfg Config, sc Scenario, impl string) Spec {
	spec := Spec{
		Scenario:   sc.Name,
		Impl:       impl,
		Workers:    sc.Workers,
		CSMs:       ms(sc.CriticalSection),
		DurationMs: ms(cfg.Duration),
		Warmup:     cfg.Warmup,
		TimeoutS:   cfg.Timeout.Seconds(),
		ExpireS:    cfg.Expire.Seconds(),
		RedisURL:   cfg.RedisURL,
		Namespace:  Namespace(impl),
		WarmupKey:  sc.Name + ":" + warmupKey,
	}
	if sc.SharedKey {
		spec.Keys = []string{sc.Name + ":" + sharedKey}
		spec.CounterKey = counterPrefix + impl + ":" + sc.Name
	} else {
		for i := 0; i < sc.Workers; i++ {
			spec.Keys = append(spec.Keys, sc.Name+":"+fmt.Sprintf(perWorkerKeyTemplate, i))
		}
	}
	return spec
}

// Namespace is the lock namespace of an implementation's runs: "locktui_bench:<impl>:". Key
// names start with the scenario's name, so no two runs share a lock. An implementation whose
// namespace is fixed when it starts (a bridge server) uses this in its Setup.
func Namespace(impl string) string { return namespacePrefix + impl + ":" }

// maxLockBusy is the most of a window one key can be held: each hold is measured inside the
// lock's own tenure (from the job's start to its end, the release after it), and only holds
// that ended inside the window are summed, so without overlaps the holds of one key never add
// up to more than the window. The margin is for rounding, and for a multi-process row whose
// processes date their windows with clocks read a few microseconds apart.
const maxLockBusy = 1.01

// problems lists what makes a result wrong (not slow): overlaps seen by either detector, holds
// that add up to more than the window, failed executes, no execute at all.
func problems(r Result) []string {
	var out []string
	if r.Overlaps > 0 {
		out = append(out, fmt.Sprintf("%s/%s: %d overlapping critical sections (in-process detector)", r.Name, r.Impl, r.Overlaps))
	}
	if r.RedisMaxInCS != nil && *r.RedisMaxInCS > 1 {
		out = append(out, fmt.Sprintf("%s/%s: Redis counter reached %d inside the critical section", r.Name, r.Impl, *r.RedisMaxInCS))
	}
	if r.LockBusy != nil && *r.LockBusy > maxLockBusy {
		out = append(out, fmt.Sprintf("%s/%s: the key was held %.0f %% of the window: holds that overlap, or a miscount", r.Name, r.Impl, *r.LockBusy*100))
	}
	if r.Errors > 0 {
		out = append(out, fmt.Sprintf("%s/%s: %d failed executes, first: %s", r.Name, r.Impl, r.Errors, r.FirstError))
	}
	if r.samples() == 0 {
		out = append(out, fmt.Sprintf("%s/%s: no execute succeeded", r.Name, r.Impl))
	}
	return out
}

func progressLine(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bench: %-17s %-9s", r.Name, r.Impl)
	if r.Contended() {
		fmt.Fprintf(&b, " %8.1f cs/s", r.Throughput())
		if r.Efficiency != nil {
			fmt.Fprintf(&b, " (%.0f%% of ideal)", *r.Efficiency*100)
		}
		fmt.Fprintf(&b, " wait p50 %.1f ms p99 %.1f ms, fairness %.3f", r.WaitMs.P50, r.WaitMs.P99, r.Fairness)
	} else {
		fmt.Fprintf(&b, " %8.1f ops/s p50 %.3f ms p99 %.3f ms", r.Throughput(), r.LatencyMs.P50, r.LatencyMs.P99)
	}
	if r.Timeouts > 0 || r.Errors > 0 || r.Overlaps > 0 {
		fmt.Fprintf(&b, " timeouts %d errors %d overlaps %d", r.Timeouts, r.Errors, r.Overlaps)
	}
	return b.String()
}

// resetCounter deletes a counter key.
func resetCounter(ctx context.Context, url, key string) error {
	c, err := redisconn.Open(url, redisconn.TLSFiles{})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("bench: reset counter %s: %w", key, err)
	}
	return nil
}

// redisServer reads redis_version from INFO server.
func redisServer(ctx context.Context, url string) (string, error) {
	c, err := redisconn.Open(url, redisconn.TLSFiles{})
	if err != nil {
		return "", err
	}
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("bench: redis %s does not answer: %w", redisconn.Describe(url), err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("bench: INFO server has no redis_version")
}

// syncWriter serialises writes to the log: progress comes from Run, child stderr from the
// goroutines of os/exec.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
