package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
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
	// CompatDir is the compat/ directory (see FindCompatDir); needed by Node implementations.
	CompatDir string
	// Duration is each scenario's measurement window per implementation; default 3 s.
	Duration time.Duration
	// Warmup is the number of sequential executes before each window; 0 means the default
	// (50), a negative value none.
	Warmup int
	// Timeout and Expire are execute's arguments; defaults 5 s and 60 s, as stock.
	Timeout time.Duration
	Expire  time.Duration
	// Scenarios default to DefaultScenarios, Impls to Implementations.
	Scenarios []Scenario
	Impls     []Impl
	// Log receives progress; default io.Discard.
	Log io.Writer
}

func (c Config) withDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
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
	if len(c.Scenarios) == 0 {
		c.Scenarios = DefaultScenarios()
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
	DurationMs float64  `json:"duration_ms"`
	Warmup     int      `json:"warmup"`
	TimeoutS   float64  `json:"timeout_s"`
	ExpireS    float64  `json:"expire_s"`
	Impls      []string `json:"impls"`
	Baseline   string   `json:"baseline"`
}

// Report is the JSON document `make bench` prints.
type Report struct {
	Redis      string                         `json:"redis"`
	Env        Environment                    `json:"env"`
	Settings   Settings                       `json:"settings"`
	Scenarios  []Result                       `json:"scenarios"`
	Ratios     map[string]map[string]*float64 `json:"ratios"`
	MetricsDoc map[string]string              `json:"metrics_doc"`
	// Problems lists correctness failures (overlaps, errors); empty on a good run.
	Problems []string `json:"problems"`
}

// Run runs every scenario with every implementation, one after the other (for each scenario,
// each implementation in turn, so the runs compared by a ratio are adjacent in time), and
// returns the report. A correctness failure is reported in Report.Problems, not as an error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	env := Env{RedisURL: cfg.RedisURL, CompatDir: cfg.CompatDir, Log: cfg.Log}
	rep := &Report{
		Env: Environment{
			Go: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), Cores: runtime.NumCPU(),
			OS: runtime.GOOS, Arch: runtime.GOARCH,
			Node: nodeVersion(ctx),
			Packages: packageVersions(cfg.CompatDir,
				"@medusajs/locking-redis", "@medusajs/framework", "ioredis", "ws"),
		},
		Settings: Settings{
			DurationMs: ms(cfg.Duration), Warmup: cfg.Warmup,
			TimeoutS: cfg.Timeout.Seconds(), ExpireS: cfg.Expire.Seconds(), Baseline: Baseline,
		},
		MetricsDoc: MetricsDoc,
		Problems:   []string{},
	}
	if name, version := localPackageVersion(filepath.Join(cfg.CompatDir, bridgeClientDir)); version != "" {
		rep.Env.Packages[name] = version
	}
	version, err := redisVersion(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	rep.Redis, rep.Env.Redis = version, version

	runners, err := openAll(ctx, cfg.Impls, env)
	if err != nil {
		return nil, err
	}
	defer closeAll(cfg.Impls, runners, cfg.Log)
	for _, im := range cfg.Impls {
		rep.Settings.Impls = append(rep.Settings.Impls, im.Name())
	}

	for _, sc := range cfg.Scenarios {
		for i, im := range cfg.Impls {
			spec := makeSpec(cfg, sc, im.Name())
			raw, err := runners[i].Run(ctx, spec)
			if err != nil {
				return nil, fmt.Errorf("%s with %s: %w", sc.Name, im.Name(), err)
			}
			res := Summarize(sc, spec, raw)
			rep.Scenarios = append(rep.Scenarios, res)
			rep.Problems = append(rep.Problems, problems(res)...)
			fmt.Fprintln(cfg.Log, progressLine(res))
		}
	}
	rep.Ratios = Ratios(rep.Scenarios, Baseline)
	return rep, nil
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

// problems lists what makes a result wrong (not slow).
func problems(r Result) []string {
	var out []string
	if r.Overlaps > 0 {
		out = append(out, fmt.Sprintf("%s/%s: %d overlapping critical sections (in-process detector)", r.Name, r.Impl, r.Overlaps))
	}
	if r.RedisMaxInCS != nil && *r.RedisMaxInCS > 1 {
		out = append(out, fmt.Sprintf("%s/%s: Redis counter reached %d inside the critical section", r.Name, r.Impl, *r.RedisMaxInCS))
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
	fmt.Fprintf(&b, "bench: %-17s %-6s", r.Name, r.Impl)
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

// redisVersion reads redis_version from INFO server.
func redisVersion(ctx context.Context, url string) (string, error) {
	c, err := redisconn.Open(url, redisconn.TLSFiles{})
	if err != nil {
		return "", err
	}
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("bench: redis %s does not answer: %w", redisconn.Describe(url), err)
	}
	for _, line := range strings.Split(info, "\n") {
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
