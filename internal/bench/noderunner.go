package bench

import (
	"bufio"
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
)

// NodeInstallHint tells a developer how to get node.
const NodeInstallHint = "node not found on PATH: install Node.js 20 or newer (https://nodejs.org, or `apt-get install -y nodejs npm` on Debian/Ubuntu), then run `make node-deps`"

// ErrNodeDeps is returned when compat/node_modules lacks a package a Node implementation needs.
var ErrNodeDeps = errors.New("bench: Node dependencies are not installed: run `make node-deps`")

// NodeImpl runs scenarios in one Node child process per run: `node <CompatDir>/<Script> --serve`,
// working directory CompatDir. The child prints {"ready":true} once loaded, then reads one Spec as
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
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New(NodeInstallHint)
	}
	script := filepath.Join(env.CompatDir, filepath.FromSlash(n.Script))
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("%s: runner script missing: %w", n.ImplName, err)
	}
	requires := n.Requires
	if len(requires) == 0 {
		requires = []string{"@medusajs/locking-redis", "ioredis"}
	}
	for _, pkg := range requires {
		if _, err := os.Stat(filepath.Join(env.CompatDir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			return nil, fmt.Errorf("%w (%s needs %s in %s)", ErrNodeDeps, n.ImplName, pkg, filepath.Join(env.CompatDir, "node_modules"))
		}
	}
	r := &nodeRunner{name: n.ImplName}
	if n.Setup != nil {
		if r.extra, r.stop, err = n.Setup(ctx, env); err != nil {
			return nil, fmt.Errorf("%s: setup: %w", n.ImplName, err)
		}
	}
	if err := r.start(ctx, node, script, env); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// nodeRunner owns one child process. Its reader goroutine hands stdout lines to Run; it ends
// when the child's stdout closes.
type nodeRunner struct {
	name   string
	extra  map[string]any
	stop   func() error
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lineWriter
	lines  chan []byte // closed when the child's stdout ends

	closeOnce sync.Once
	closeErr  error
}

// start launches the child and waits for its ready line, so its start-up (loading
// @medusajs/framework takes seconds of CPU) never overlaps a measurement.
func (r *nodeRunner) start(ctx context.Context, node, script string, env Env) error {
	cmd := exec.Command(node, script, "--serve")
	cmd.Dir = env.CompatDir
	return r.startCmd(ctx, cmd, env.Log)
}

// startCmd launches cmd, a child that speaks the protocol of NodeImpl (a Node runner script or
// a Go worker process, see GoProcessImpl), and waits for its ready line.
func (r *nodeRunner) startCmd(ctx context.Context, cmd *exec.Cmd, log io.Writer) error {
	r.cmd = cmd
	r.stderr = &lineWriter{prefix: "  [" + r.name + "] ", out: log}
	r.cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("%s: start %s: %w", r.name, filepath.Base(r.cmd.Path), err)
	}
	r.lines = make(chan []byte, 1)
	go func() {
		defer close(r.lines)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				r.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
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
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var line []byte
	select {
	case l, ok := <-r.lines:
		if !ok {
			return nil, fmt.Errorf("%s: %s: runner process exited: %s", r.name, what, r.stderr.Last())
		}
		line = l
	case <-ctx.Done():
		_ = r.cmd.Process.Kill()
		return nil, fmt.Errorf("%s: %s: %w", r.name, what, context.Cause(ctx))
	case <-timer.C:
		_ = r.cmd.Process.Kill()
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
	if _, err := r.stdin.Write(append(line, '\n')); err != nil {
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
		if r.cmd != nil && r.cmd.Process != nil {
			_ = r.stdin.Close()
			timer := time.NewTimer(closeGrace)
			drained := false
			for !drained {
				select {
				case _, ok := <-r.lines:
					drained = !ok
				case <-timer.C:
					_ = r.cmd.Process.Kill()
					timer.Reset(time.Hour) // the kill closes stdout
				}
			}
			timer.Stop()
			if err := r.cmd.Wait(); err != nil {
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
