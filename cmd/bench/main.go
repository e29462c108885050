// Command bench runs the Go lock provider, stock Medusa's @medusajs/locking-redis and the bridge
// client (compat/medusa-locking-bridge, through a Go bridge built and started for the run) side
// by side against a private redis-server and prints one JSON report on stdout (progress and a
// Markdown table of the results on stderr): single-process scenarios, with three peers beside
// them (bsm/redislock, go-redsync and a bare SET NX loop, in-process), multi-process ones (4
// processes × 4 workers on one key, mixing implementations) and a run on a local 3-master Redis
// Cluster.
//
//	go run ./cmd/bench                 # 3 s per scenario and implementation
//	go run ./cmd/bench --quick         # smoke test: a fraction of a second each
//	go run ./cmd/bench --duration 2s --scenario contended_8x1ms --impl go,bridge,stock
//	go run ./cmd/bench --impl go,stock,bare --scenario uncontended_1,contended_8x1ms
//
// It needs redis-server, node and go (which builds the bridge; --impl go,stock does without it)
// on PATH and compat/node_modules (`make node-deps`). The exit status is 0 on a correct run, 1
// when a run failed or found a correctness problem (overlapping critical sections, a key held
// for more of the window than the window has, failed executes; the report is still printed), 2
// for bad flags. Speed is reported, never judged.
//
// Started with LOCKTUI_BENCH_WORKER=1 it is a Go worker process of the multi-process scenarios
// instead (see bench.WorkerEnv).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/locktui/locktui/internal/bench"
	"github.com/locktui/locktui/internal/nodeproc"
)

func main() {
	if bench.IsWorker() { // a Go worker process started by a multi-process scenario
		os.Exit(bench.WorkerMain())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	duration  time.Duration
	multiDur  time.Duration
	quick     bool
	warmup    int
	timeout   time.Duration
	impls     string
	scenarios string
	compat    string
	redisURL  string
	fairQueue bool
}

// errUsage marks a command-line error (exit status 2); flag has already printed the details.
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", bench.DefaultDuration, "measurement window of each scenario for each implementation")
	fs.DurationVar(&o.multiDur, "multi-duration", bench.DefaultMultiDuration, "measurement window of each multi-process scenario (twice the execute timeout lets a starved call time out inside it)")
	fs.BoolVar(&o.quick, "quick", false, fmt.Sprintf("smoke test: %s windows and %d warm-up calls (an explicit --duration/--multi-duration/--warmup wins)", bench.QuickDuration, bench.QuickWarmup))
	fs.IntVar(&o.warmup, "warmup", bench.DefaultWarmup, "sequential execute calls before each window")
	fs.DurationVar(&o.timeout, "timeout", bench.DefaultExecTimeout, "execute's acquisition timeout, at least 1s (stock's default waitLockingTimeout is 5s)")
	fs.StringVar(&o.impls, "impl", "all", "comma-separated implementations to run ("+strings.Join(implNames(), ", ")+"); the peers ("+strings.Join([]string{bench.RedislockName, bench.RedsyncName, bench.BareName}, ", ")+") run in the single-process scenarios only")
	fs.StringVar(&o.scenarios, "scenario", "all", "comma-separated scenarios to run ("+strings.Join(bench.Plan{Scenarios: bench.DefaultScenarios(), Multi: bench.DefaultMultiScenarios(), Cluster: bench.DefaultClusterScenarios()}.Names(), ", ")+"); a multi-process scenario runs only when --impl has all its implementations, the cluster ones only with go")
	fs.StringVar(&o.compat, "compat", "", "the compat/ directory with node_modules (default: found from the working directory)")
	fs.BoolVar(&o.fairQueue, "fair-queue", false, "run the Go provider, Go worker processes and the bridge with the fair queue on (docs/waiting.md); stock is unchanged")
	fs.StringVar(&o.redisURL, "redis-url", "", "use this Redis instead of starting a private redis-server (it must be a scratch server: the run writes keys)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench [flags]\n\nRuns the Go provider, stock Medusa, the bridge client and three peer Redis locks side by side and prints a JSON report.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q\n", fs.Arg(0))
		return o, errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick && !set["duration"] {
		o.duration = bench.QuickDuration
	}
	if o.quick && !set["multi-duration"] {
		o.multiDur = bench.QuickDuration
	}
	if o.quick && !set["warmup"] {
		o.warmup = bench.QuickWarmup
	}
	switch {
	case o.duration <= 0:
		fmt.Fprintf(stderr, "bench: --duration must be positive, got %s\n", o.duration)
		return o, errUsage
	case o.multiDur <= 0:
		fmt.Fprintf(stderr, "bench: --multi-duration must be positive, got %s\n", o.multiDur)
		return o, errUsage
	case o.warmup < 0:
		fmt.Fprintf(stderr, "bench: --warmup must not be negative, got %d\n", o.warmup)
		return o, errUsage
	case o.timeout < time.Second:
		fmt.Fprintf(stderr, "bench: --timeout must be at least 1s (stock raises anything lower to 1s), got %s\n", o.timeout)
		return o, errUsage
	}
	return o, nil
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	plan, err := bench.SelectPlan(o.scenarios)
	if err == nil {
		var impls []bench.Impl
		if impls, err = bench.SelectImpls(o.impls); err == nil {
			return runBench(ctx, o, plan, impls, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "bench: %v\n", err)
	return 2
}

func runBench(ctx context.Context, o options, plan bench.Plan, impls []bench.Impl, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	compat := o.compat
	if compat == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fail(err)
		}
		if compat, err = nodeproc.FindCompatDir(wd); err != nil {
			return fail(fmt.Errorf("%w, or pass --compat", err))
		}
	}
	url := o.redisURL
	if url == "" {
		srv, err := bench.StartRedis(ctx)
		if err != nil {
			return fail(err)
		}
		defer srv.Stop()
		url = srv.URL
		fmt.Fprintf(stderr, "bench: private redis-server on %s\n", srv.Addr)
	}
	rep, err := bench.Run(ctx, bench.Config{
		RedisURL:      url,
		CompatDir:     compat,
		Duration:      o.duration,
		MultiDuration: o.multiDur,
		Warmup:        warmupArg(o.warmup),
		Timeout:       o.timeout,
		Scenarios:     plan.Scenarios,
		Multi:         plan.Multi,
		Cluster:       plan.Cluster,
		Impls:         impls,
		Log:           stderr,
		FairQueue:     o.fairQueue,
	})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stderr)
	if err := bench.WriteTable(stderr, rep); err != nil {
		return fail(err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fail(err)
	}
	if len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			fmt.Fprintf(stderr, "bench: PROBLEM: %s\n", p)
		}
		return 1
	}
	return 0
}

// implNames lists every implementation's name, in report order.
func implNames() []string {
	var out []string
	for _, im := range bench.Implementations() {
		out = append(out, im.Name())
	}
	return out
}

// warmupArg maps the --warmup count to Config.Warmup, where 0 means the default and a negative
// value means none.
func warmupArg(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
