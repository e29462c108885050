// Package nodeproc runs Node child processes from the compat/ directory (the npm install root
// next to go.mod) and talks to them in lines: a request on the child's stdin, an answer or a
// notice on its stdout, one line each. The benchmark (internal/bench) runs its Node runners, and
// its Go worker processes, with it; the tests' stock Medusa driver (internal/testsupport/stocknode)
// runs on it too.
//
// LookPath finds node, FindCompatDir the compat/ directory, CheckDeps the npm packages a script
// loads; a missing one gives an error saying how to install it (ErrNotFound, ErrDeps). Command
// builds `node <script>` in compat/, and Start runs a command whose stdout Next reads line by
// line.
package nodeproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// InstallHint tells a developer how to get node.
const InstallHint = "node not found on PATH: install Node.js 20 or newer (https://nodejs.org, or `apt-get install -y nodejs npm` on Debian/Ubuntu), then run `make node-deps`"

// ErrNotFound is returned by LookPath and Command when node is not on PATH. Its message is
// InstallHint.
var ErrNotFound = errors.New(InstallHint)

// DepsHint tells a developer how to install the npm packages of compat/.
const DepsHint = "run `make node-deps` (npm ci in compat/)"

// ErrDeps is matched by CheckDeps' error when a package is missing. Its message is DepsHint.
var ErrDeps = errors.New(DepsHint)

// ErrExited is returned by Next once the process has exited and every line it wrote was read.
var ErrExited = errors.New("nodeproc: the process exited")

// LookPath returns the path of node, or ErrNotFound.
func LookPath() (string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", ErrNotFound
	}
	return node, nil
}

// FindCompatDir returns the compat/ directory of the locktui repository that holds dir: the
// first of dir and its parents holding go.mod and compat/package.json.
func FindCompatDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if exists(filepath.Join(d, "go.mod")) && exists(filepath.Join(d, "compat", "package.json")) {
			return filepath.Join(d, "compat"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no compat/package.json next to a go.mod in %s or its parents: run inside the locktui repository", abs)
		}
	}
}

// CheckDeps reports the first of pkgs (npm package names, e.g. "@medusajs/locking-redis") that
// is not installed in compat/node_modules, with an error matching ErrDeps.
func CheckDeps(compat string, pkgs ...string) error {
	modules := filepath.Join(compat, "node_modules")
	for _, pkg := range pkgs {
		if !exists(filepath.Join(modules, filepath.FromSlash(pkg), "package.json")) {
			return fmt.Errorf("%s is not installed in %s: %w", pkg, modules, ErrDeps)
		}
	}
	return nil
}

// Command returns the command `node <script> args…` run in compat, script relative to compat
// (e.g. "bench/stock-bench.js"), or ErrNotFound.
func Command(compat, script string, args ...string) (*exec.Cmd, error) {
	node, err := LookPath()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, append([]string{filepath.FromSlash(script)}, args...)...)
	cmd.Dir = compat
	return cmd, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Process is a running child that reads lines on its stdin and writes lines on its stdout. Its
// stderr goes where the command's Stderr says. Its methods are safe for concurrent use.
type Process struct {
	cmd *exec.Cmd

	wmu   sync.Mutex // serialises writes to stdin
	stdin io.WriteCloser

	mu     sync.Mutex
	lines  [][]byte      // read from stdout, not yet taken by Next
	more   chan struct{} // closed, and replaced, when a line arrives or stdout ends
	ended  bool          // stdout ended and the process was waited for
	err    error         // the process's exit (cmd.Wait), once ended
	exited chan struct{} // closed once ended
}

// Start starts cmd (from Command, or any program that speaks lines, as the benchmark's Go
// worker processes do) with pipes to its stdin and stdout. The process's stdout is read at
// once, whether Next is called or not, so the child never blocks on it.
func Start(cmd *exec.Cmd) (*Process, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	p := &Process{cmd: cmd, stdin: stdin, more: make(chan struct{}), exited: make(chan struct{})}
	go p.read(stdout)
	return p, nil
}

// read queues every non-blank line of stdout until it ends, then waits for the process.
func (p *Process) read(stdout io.Reader) {
	br := bufio.NewReader(stdout)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			p.mu.Lock()
			p.lines = append(p.lines, line)
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, stdout) // after a read error: drain, so the child can exit
	err := p.cmd.Wait()
	p.mu.Lock()
	p.ended, p.err = true, err
	close(p.more)
	p.mu.Unlock()
	close(p.exited)
}

// Next returns the next line the process wrote on stdout (without its line end; blank lines are
// skipped). Once the process has exited and every line was read it returns ErrExited; when ctx
// ends first, context.Cause(ctx).
func (p *Process) Next(ctx context.Context) ([]byte, error) {
	for {
		p.mu.Lock()
		if len(p.lines) > 0 {
			line := p.lines[0]
			p.lines[0] = nil
			p.lines = p.lines[1:]
			p.mu.Unlock()
			return line, nil
		}
		ended, more := p.ended, p.more
		p.mu.Unlock()
		if ended {
			return nil, ErrExited
		}
		select {
		case <-more:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Send writes line and a line end to the process's stdin.
func (p *Process) Send(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.stdin.Write(append(line[:len(line):len(line)], '\n'))
	return err
}

// CloseInput closes the process's stdin: a child that serves until its input ends then exits.
func (p *Process) CloseInput() error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.stdin.Close()
}

// Kill kills the process.
func (p *Process) Kill() { _ = p.cmd.Process.Kill() }

// Exited is closed once the process has exited and its stdout was read to the end.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err returns how the process exited (cmd.Wait's error: nil for status 0), once Exited is
// closed; nil before.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop closes the process's stdin, gives it grace to exit, kills it if it is still running and
// returns how it exited (see Err).
func (p *Process) Stop(grace time.Duration) error {
	_ = p.CloseInput()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		p.Kill()
		<-p.exited
	}
	return p.Err()
}
