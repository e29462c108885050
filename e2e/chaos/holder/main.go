// Command holder is one lock holder of a chaos run (e2e/chaos_test.go): it takes shared keys
// again and again and logs, on the machine's monotonic clock (chaos.MonoNow), when it starts and
// stops believing that it holds one. Each mode is one kind of holder:
//
//	holder go      --redis URL --log FILE --holder ID --keys K1,K2 [--expire 2s] [--timeout 3s] [--work 20ms] [--long 6s --long-percent 50] [--max-retry 1s]
//	holder poller  --redis URL --log FILE --holder ID --keys K1,K2 [--px 2s] [--every 1ms] [--work 5ms] [--rest 0]
//	holder runloop --redis URL --log FILE --holder ID --keys K1,K2 --locktui BIN [--expire 2s] [--grace 200ms] [--timeout 3s] [--work 20ms] [--long …]
//	holder child   --log FILE --holder ID --key K [--work 20ms] [--long …]
//
// The modes:
//   - go: the Go provider's AcquireLease on a random key, work for a random time up to --work,
//     Release. It logs enter (with the lease's owner) once the lease is granted, exit just before
//     Release, and lost when the lease's Done fires while it works.
//   - poller: a foreign process: SET key owner NX PX every --every on a random key; enter when the
//     SET succeeds and its reply came within a quarter of --px, exit just before an owner-checked
//     delete; then it rests for --rest.
//   - runloop: `locktui run KEY --expire … --grace … -- holder child …` again and again; the
//     child (which logs under the loop's holder id) logs enter when it starts, exit at its normal
//     end and lost when it gets SIGTERM (then exits). When a child dies without either (SIGKILL
//     after the grace), the loop logs lost for it at the moment it died.
//   - child: that child.
//
// Every mode runs until SIGTERM or SIGINT, then finishes the current acquisition and exits 0.
// --seed seeds the random choices. Diagnostics go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/locktui/locktui/e2e/chaos"
)

// config holds every flag; each mode reads the ones it needs.
type config struct {
	redis, logPath, holder, locktui, key string
	keys                                 []string
	expire, timeout, work, grace         time.Duration
	long, maxRetry                       time.Duration
	longPercent                          int
	px, every, rest                      time.Duration
	seed                                 uint64
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: holder go|poller|runloop|child [flags]")
		return 2
	}
	mode := args[0]
	// The child handles SIGTERM itself: it is how it learns that its lock is lost. The other
	// modes stop on it, from their first instant: a holder that the run stops right after
	// starting it must exit 0, not die of the signal before it got to its handler.
	ctx := context.Background()
	if mode != "child" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
	}
	var c config
	fs := flag.NewFlagSet("holder "+mode, flag.ContinueOnError)
	fs.StringVar(&c.redis, "redis", "", "Redis URL")
	fs.StringVar(&c.logPath, "log", "", "the log file to append to")
	fs.StringVar(&c.holder, "holder", "", "holder id, e.g. go-1#0")
	fs.StringVar(&c.locktui, "locktui", "", "runloop: the locktui binary")
	fs.StringVar(&c.key, "key", "", "child: the key locktui run holds")
	keys := fs.String("keys", "", "comma-separated lock keys")
	fs.DurationVar(&c.expire, "expire", 2*time.Second, "lease expiry")
	fs.DurationVar(&c.timeout, "timeout", 3*time.Second, "lock wait")
	fs.DurationVar(&c.work, "work", 20*time.Millisecond, "longest work while holding a key")
	fs.DurationVar(&c.long, "long", 0, "longest long work (see --long-percent)")
	fs.DurationVar(&c.maxRetry, "max-retry", 0, "go: the provider's MaximumRetryInterval (0: its default, 1 s)")
	fs.IntVar(&c.longPercent, "long-percent", 0, "percentage of acquisitions that work --long/2 to --long, long enough for renewals and faults to matter")
	fs.DurationVar(&c.grace, "grace", 200*time.Millisecond, "runloop: locktui run --grace")
	fs.DurationVar(&c.px, "px", 2*time.Second, "poller: PX of its SET")
	fs.DurationVar(&c.every, "every", time.Millisecond, "poller: one SET NX this often")
	fs.DurationVar(&c.rest, "rest", 0, "poller: pause after each of its releases")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the random choices (0: random)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *keys != "" {
		c.keys = strings.Split(*keys, ",")
	}
	if c.seed == 0 {
		c.seed = rand.Uint64()
	}
	if c.logPath == "" || c.holder == "" {
		fmt.Fprintln(os.Stderr, "holder: --log and --holder are required")
		return 2
	}
	modes := map[string]func(context.Context, *holder) error{
		"go": runGo, "poller": runPoller, "runloop": runLoop, "child": runChild,
	}
	fn := modes[mode]
	if fn == nil {
		fmt.Fprintf(os.Stderr, "holder: unknown mode %q\n", mode)
		return 2
	}
	if mode != "child" && (len(c.keys) == 0 || c.redis == "") {
		fmt.Fprintln(os.Stderr, "holder: --keys and --redis are required")
		return 2
	}
	log, err := chaos.OpenLog(c.logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	defer log.Close()
	h := &holder{config: c, log: log, rng: rand.New(rand.NewPCG(c.seed, c.seed^0x9e3779b97f4a7c15))}
	if err := fn(ctx, h); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "holder %s: %v\n", c.holder, err)
		return 1
	}
	return 0
}

// holder is the running mode's state.
type holder struct {
	config
	log *chaos.Log
	rng *rand.Rand
}

// logEv logs an event now; a log that cannot be written ends the process, since the run's
// check would otherwise miss a belief.
func (h *holder) logEv(key string, ev chaos.EventKind, fields ...chaos.Field) int64 {
	t, err := h.log.Now(h.holder, key, ev, fields...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "holder %s: %v\n", h.holder, err)
		os.Exit(1)
	}
	return t
}

// pick returns a random key.
func (h *holder) pick() string { return h.keys[h.rng.IntN(len(h.keys))] }

// workTime returns a random duration in [0, --work], or, for --long-percent of the calls, in
// [--long/2, --long].
func (h *holder) workTime() time.Duration {
	if h.long > 0 && h.rng.IntN(100) < h.longPercent {
		return h.long/2 + time.Duration(h.rng.Int64N(int64(h.long/2)+1))
	}
	if h.work <= 0 {
		return 0
	}
	return time.Duration(h.rng.Int64N(int64(h.work) + 1))
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
