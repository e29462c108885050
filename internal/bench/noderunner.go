package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/locktui/locktui/internal/nodeproc"
)

// NodeImpl runs scenarios in one Node child process per run (internal/nodeproc): `node <Script>
// --serve` in CompatDir. The child prints {"ready":true} once loaded, then reads one Spec as
// a JSON line on stdin per scenario and answers with one JSON line, {"raw": Raw} or
// {"error": "…"}; it exits when stdin closes.
// (Loading @medusajs/framework takes seconds on a busy machine, so the child is started once
// and the scenarios still alternate between implementations.) Its stderr is copied to the log.
// compat/bench/harness.js implements the protocol, the worker loop and the observations, so a
// script only says how to build its implementation; `node <script> '<Spec JSON>'` runs one
// scenario by hand.
type NodeImpl struct {
	// ImplName is the name in the report, e.g. "stock".
	ImplName string
	// Script is the runner script, relative to CompatDir, e.g. "bench/stock-bench.js".
	Script string
	// Requires are the node_modules packages the script needs; default
	// "@medusajs/locking-redis" and "ioredis".
	Requires []string
	// Setup, when set, runs once when the implementation is opened (e.g. to start a bridge
	// server). Its extra settings reach the script as Spec.Extra; stop is called on Close.
	Setup func(ctx context.Context, env Env) (extra map[string]any, stop func() error, err error)
}

// Name returns ImplName.
func (n NodeImpl) Name() string { return n.ImplName }

// Open checks that node, the script and its packages are installed, runs Setup and starts the
// child.
func (n NodeImpl) Open(ctx context.Context, env Env) (Runner, error) {
	cmd, err := nodeproc.Command(env.CompatDir, n.Script, "--serve")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(env.CompatDir, filepath.FromSlash(n.Script))); err != nil {
		return nil, fmt.Errorf("%s: runner script missing: %w", n.ImplName, err)
	}
	requires := n.Requires
	if len(requires) == 0 {
		requires = []string{"@medusajs/locking-redis", "ioredis"}
	}
	if err := nodeproc.CheckDeps(env.CompatDir, requires...); err != nil {
		return nil, fmt.Errorf("%s: %w", n.ImplName, err)
	}
	r := &nodeRunner{name: n.ImplName}
	if n.Setup != nil {
		if r.extra, r.stop, err = n.Setup(ctx, env); err != nil {
			return nil, fmt.Errorf("%s: setup: %w", n.ImplName, err)
		}
	}
	if err := r.start(ctx, cmd, env.Log); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// nodeRunner owns one child process (a Node runner script, or a Go worker process, see
// GoProcessImpl) that speaks the protocol of NodeImpl.
type nodeRunner struct {
	name   string
	extra  map[string]any
	stop   func() error
	proc   *nodeproc.Process
	stderr *lineWriter

	closeOnce sync.Once
	closeErr  error
}

// start launches cmd and waits for its ready line, so its start-up (loading
// @medusajs/framework takes seconds of CPU) never overlaps a measurement.
func (r *nodeRunner) start(ctx context.Context, cmd *exec.Cmd, log io.Writer) error {
	r.stderr = &lineWriter{prefix: "  [" + r.name + "] ", out: log}
	cmd.Stderr = r.stderr
	proc, err := nodeproc.Start(cmd)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	r.proc = proc
	rep, err := r.await(ctx, "start-up", childGrace)
	if err != nil {
		return err
	}
	if !rep.Ready {
		return fmt.Errorf("%s: the runner process did not start with a ready line", r.name)
	}
	return nil
}

// await waits for the child's next line and decodes it. If the child does not answer within
// limit or ctx ends first, the child is killed and the runner is unusable.
func (r *nodeRunner) await(ctx context.Context, what string, limit time.Duration) (*reply, error) {
	wait, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	line, err := r.proc.Next(wait)
	if err != nil {
		if errors.Is(err, nodeproc.ErrExited) {
			return nil, fmt.Errorf("%s: %s: runner process exited: %s", r.name, what, r.stderr.Last())
		}
		r.proc.Kill()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %s: %w", r.name, what, context.Cause(ctx))
		}
		return nil, fmt.Errorf("%s: %s: the runner process did not answer within %s", r.name, what, limit)
	}
	var rep reply
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("%s: %s: bad output from the runner process: %w", r.name, what, err)
	}
	return &rep, nil
}

// childGrace bounds the child's start-up, and a scenario beyond its window: warm-up and the
// drain of waits that last up to the execute timeout.
const childGrace = 2 * time.Minute

// reply is one line of the child: the ready line, then one answer per scenario.
type reply struct {
	Ready bool   `json:"ready"`
	Raw   *Raw   `json:"raw"`
	Error string `json:"error"`
}

// Run sends spec to the child and decodes its answer (see await).
func (r *nodeRunner) Run(ctx context.Context, spec Spec) (*Raw, error) {
	spec.Extra = r.extra
	line, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := r.proc.Send(line); err != nil {
		return nil, fmt.Errorf("%s: %s: runner process is gone: %v: %s", r.name, spec.Scenario, err, r.stderr.Last())
	}
	rep, err := r.await(ctx, spec.Scenario, spec.Duration()+childGrace)
	if err != nil {
		return nil, err
	}
	switch {
	case rep.Error != "":
		return nil, fmt.Errorf("%s: %s: %s", r.name, spec.Scenario, rep.Error)
	case rep.Raw == nil:
		return nil, fmt.Errorf("%s: %s: runner process answered neither raw nor error", r.name, spec.Scenario)
	case len(rep.Raw.Completed) != spec.Workers:
		return nil, fmt.Errorf("%s: %s: runner process reported %d workers, want %d", r.name, spec.Scenario, len(rep.Raw.Completed), spec.Workers)
	}
	return rep.Raw, nil
}

// closeGrace is how long the child may take to exit after its stdin closes.
const closeGrace = 5 * time.Second

// Close ends the child (closing its stdin, killing it if it lingers) and runs Setup's stop.
func (r *nodeRunner) Close() error {
	r.closeOnce.Do(func() {
		var errs []error
		if r.proc != nil {
			if err := r.proc.Stop(closeGrace); err != nil {
				errs = append(errs, fmt.Errorf("%s: runner process: %w", r.name, err))
			}
		}
		if r.stop != nil {
			errs = append(errs, r.stop())
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// lineWriter copies a child's stderr to out line by line, each line prefixed, and remembers the
// last line for error messages. out may be nil. onLine, when set, also sees every line.
type lineWriter struct {
	prefix string
	out    io.Writer
	onLine func(line string)

	mu      sync.Mutex
	partial []byte
	last    string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if line == "" {
			continue
		}
		w.last = line
		if w.out != nil {
			fmt.Fprintf(w.out, "%s%s\n", w.prefix, line)
		}
		if w.onLine != nil {
			w.onLine(line)
		}
	}
	return len(p), nil
}

// Last returns the last complete line written, or a placeholder.
func (w *lineWriter) Last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == "" {
		return "(nothing on stderr)"
	}
	return w.last
}
