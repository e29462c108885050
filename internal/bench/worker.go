package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// WorkerEnv is the environment variable that turns a binary holding this package into a Go
// worker process: a program whose main starts with
//
//	if bench.IsWorker() { os.Exit(bench.WorkerMain()) }
//
// (cmd/bench does, and so do this package's tests) serves scenarios with the Go runner on
// stdin and stdout, speaking the protocol of the Node runners (see NodeImpl). GoProcessImpl
// starts such processes for the multi-process scenarios.
const WorkerEnv = "LOCKTUI_BENCH_WORKER"

// workerFairEnv=1 in a worker process's environment turns the fair queue on (Env.FairQueue).
const workerFairEnv = "LOCKTUI_BENCH_FAIR_QUEUE"

// IsWorker reports whether this process was started as a Go worker process (WorkerEnv=1).
func IsWorker() bool { return os.Getenv(WorkerEnv) == "1" }

// WorkerMain serves scenarios on stdin and stdout until stdin closes (see ServeWorker) and
// returns the exit status; errors go to stderr.
func WorkerMain() int {
	if err := ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "go worker: %v\n", err)
		return 1
	}
	return 0
}

// ServeWorker speaks the runner protocol with the Go runner (GoImpl, the Go provider with stock
// defaults): a {"ready":true} line, then for each Spec line on in one {"raw": …} or
// {"error": "…"} line on out. It returns when in ends.
func ServeWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	if err := enc.Encode(reply{Ready: true}); err != nil {
		return err
	}
	runners := map[string]Runner{} // by Redis URL
	defer func() {
		for _, r := range runners {
			_ = r.Close()
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ans reply
		raw, err := serveOne(ctx, runners, sc.Bytes())
		if err != nil {
			ans.Error = err.Error()
		} else {
			ans.Raw = raw
		}
		if err := enc.Encode(ans); err != nil {
			return err
		}
	}
	return sc.Err()
}

func serveOne(ctx context.Context, runners map[string]Runner, line []byte) (*Raw, error) {
	var spec Spec
	if err := json.Unmarshal(line, &spec); err != nil {
		return nil, fmt.Errorf("bad scenario line: %w", err)
	}
	r, ok := runners[spec.RedisURL]
	if !ok {
		var err error
		if r, err = (GoImpl{ImplName: spec.Impl}).Open(ctx, Env{RedisURL: spec.RedisURL,
			FairQueue: os.Getenv(workerFairEnv) == "1"}); err != nil {
			return nil, err
		}
		runners[spec.RedisURL] = r
	}
	return r.Run(ctx, spec)
}

// GoProcessImpl runs the Go provider in a child process of its own (a Go worker process, see
// WorkerEnv), so several Go processes can compete for one key as several services would.
type GoProcessImpl struct {
	// ImplName is the name in the report; default "go".
	ImplName string
	// Command starts the worker process; WorkerEnv=1 is added to its environment. Default:
	// this program (os.Executable), which must call WorkerMain when IsWorker.
	Command []string
}

// Name returns ImplName, default "go".
func (g GoProcessImpl) Name() string {
	if g.ImplName == "" {
		return "go"
	}
	return g.ImplName
}

// Open starts the worker process and waits for its ready line.
func (g GoProcessImpl) Open(ctx context.Context, env Env) (Runner, error) {
	argv := g.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%s: the Go worker process: %w", g.Name(), err)
		}
		argv = []string{exe}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), WorkerEnv+"=1")
	if env.FairQueue {
		cmd.Env = append(cmd.Env, workerFairEnv+"=1")
	}
	r := &nodeRunner{name: g.Name()}
	if err := r.start(ctx, cmd, env.Log); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}
