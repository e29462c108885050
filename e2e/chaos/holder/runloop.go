package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktui/locktui/e2e/chaos"
)

// runLoop is the "run" holder: `locktui run` with this program's child mode as the command,
// again and again, until ctx ends (the running invocation is let finish).
func runLoop(ctx context.Context, h *holder) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var stats counts
	defer stats.print(h.holder)
	for ctx.Err() == nil {
		code, err := h.invoke(self, h.pick())
		switch {
		case err != nil:
			return err
		case code == 0:
			stats.acquired++
		default:
			stats.failed(fmt.Errorf("locktui run exited %d", code))
			if code == 76 { // the lease was lost while the child ran
				stats.lost++
			}
			pause(ctx, retryPause)
		}
	}
	return nil
}

// invoke runs one `locktui run` to its end and returns its exit code. When the child started
// and locktui failed (the child may have died without logging the end of its belief: SIGKILLed
// after the grace), it logs lost for the child at the moment the child died, which it learns
// from a pidfd of the child (whose pid the child prints first thing); that is never earlier
// than the child's last write. A lost after the child's own exit or lost changes nothing.
func (h *holder) invoke(self, key string) (int, error) {
	cmd := exec.Command(h.locktui, "run", key, "--redis", h.redis,
		"--expire", h.expire.String(), "--grace", h.grace.String(), "--timeout", h.timeout.String(),
		"--", self, "child", "--log", h.logPath, "--holder", h.holder, "--key", key,
		"--work", h.work.String(), "--long", h.long.String(), "--long-percent", strconv.Itoa(h.longPercent),
		"--seed", strconv.FormatUint(h.rng.Uint64(), 10))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = dieWithParent()
	// A pipe of our own rather than StdoutPipe: Wait would close that one, maybe before the
	// pid line was read.
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd.Stdout = w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		return 0, err
	}
	deaths := make(chan int64, 1) // MonoNow when the child was seen dead; closed without a child
	go watchChild(r, deaths)
	err = cmd.Wait()
	code := 0
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	default:
		return 0, err
	}
	// locktui has exited, so its child has too (it waits for it): the pipe ends.
	t, started := <-deaths
	if code != 0 && started {
		if err := h.log.Append(chaos.Event{T: t, Holder: h.holder, Key: key, Ev: chaos.Lost},
			chaos.Field{Name: "by", Value: "runloop"}, chaos.Field{Name: "locktui_exit", Value: code}); err != nil {
			return 0, err
		}
	}
	return code, nil
}

// watchChild reads the child's "pid N" line from locktui's stdout, waits on a pidfd until that
// process has ended and sends the time it saw it dead on deaths; without a pid line it closes
// deaths. It drains the rest of the output.
func watchChild(stdout io.Reader, deaths chan<- int64) {
	sc := bufio.NewScanner(stdout)
	sent := false
	for sc.Scan() {
		pidText, ok := strings.CutPrefix(sc.Text(), "pid ")
		if !ok || sent {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		deaths <- awaitExit(pid)
		sent = true
	}
	if !sent {
		close(deaths)
	}
}

// awaitExit waits until process pid has ended (a zombie counts) and returns MonoNow then. If no
// pidfd can be had (the process is already gone), it returns MonoNow at once.
func awaitExit(pid int) int64 {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return chaos.MonoNow()
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
			return chaos.MonoNow()
		}
	}
}

// runChild is the command of one `locktui run`: it believes it holds --key from its start
// until its work is done (exit) or SIGTERM tells it the lock is lost (lost, then it exits 1).
func runChild(_ context.Context, h *holder) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	fmt.Printf("pid %d\n", os.Getpid()) // to the runloop, through locktui
	h.logEv(h.key, chaos.Enter, chaos.Field{Name: "pid", Value: os.Getpid()})
	work := time.NewTimer(h.workTime())
	select {
	case <-sigs:
		h.logEv(h.key, chaos.Lost, chaos.Field{Name: "by", Value: "SIGTERM"})
		os.Exit(1)
	case <-work.C:
	}
	h.logEv(h.key, chaos.Exit)
	return nil
}
