//go:build unix

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/tailbuf"
	"github.com/locktui/locktui/internal/testsupport"
)

// stopGrace is how long a process gets to exit on its own before its group is killed.
const stopGrace = 10 * time.Second

// proc is a child process in its own process group, stopped when its test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *tailbuf.Buffer
	done   chan struct{} // closed once the process has exited and its output is drained
	err    error         // Wait's result, valid after done
}

// procOptions tune startProc; the zero value keeps only a tail of stderr.
type procOptions struct {
	// onStdout and onStderr, if not nil, get each line of the process's output, each from
	// its own goroutine. Every stderr line is also kept in proc.stderr.
	onStdout, onStderr func(line string)
	// stop, if not nil, asks the process to end before the cleanup kills its group.
	stop func(*proc)
}

// startProc starts cmd in a new process group. The cleanup calls opts.stop, then kills the
// whole group and waits, so nothing outlives the test.
func startProc(t *testing.T, name string, cmd *exec.Cmd, opts procOptions) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, stderr: tailbuf.New(64 << 10), done: make(chan struct{})}
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("e2e: %s: %v", name, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("e2e: %s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("e2e: start %s: %v", name, err)
	}
	var scanners sync.WaitGroup
	scanners.Add(2)
	go func() {
		defer scanners.Done()
		scanLines(stdout, opts.onStdout)
	}()
	go func() {
		defer scanners.Done()
		scanLines(stderr, func(line string) {
			_, _ = p.stderr.Write([]byte(line + "\n"))
			if opts.onStderr != nil {
				opts.onStderr(line)
			}
		})
	}()
	go func() {
		scanners.Wait() // Wait closes the pipes: read them to the end first
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if opts.stop != nil && !p.exited() {
			opts.stop(p)
		}
		p.kill()
		if t.Failed() {
			t.Logf("%s stderr (tail):\n%s", name, p.stderr.Last(6000))
		}
	})
	return p
}

// scanLines calls fn (if not nil) for every line of r, then drains r.
func scanLines(r io.Reader, fn func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if fn != nil {
			fn(sc.Text())
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to limit for the process to end on its own.
func (p *proc) wait(limit time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(limit):
		return false
	}
}

// kill sends SIGKILL to the process group and waits until the process is reaped.
func (p *proc) kill() {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// result is the outcome of a command run to completion.
type result struct {
	stdout, stderr string
	code           int
}

// runCommand runs cmd to completion in its own process group; the group is killed if ctx
// ends first. A command that cannot start gives code -1 and the reason in stderr. It may be
// called from any goroutine.
func runCommand(ctx context.Context, cmd *exec.Cmd) result {
	var stdout, stderr testsupport.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return result{stderr: fmt.Sprintf("start %s: %v", cmd.Path, err), code: -1}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-waited
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		code = -1
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// spawnHelper is the helper (helperEnv) that starts a long sleep the way the suite starts its
// children, prints the sleep's pid and waits to be killed.
const spawnHelper = "spawn"

// runSpawnHelper starts `sleep` with childAttr, prints its pid and waits for it.
func runSpawnHelper() int {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e helper: %v\n", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	_ = cmd.Wait()
	return 0
}
