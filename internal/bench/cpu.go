package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is this process's CPU time so far (user + system), 0 when the system cannot say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// pidCPU reads the CPU time (utime + stime) of process pid from /proc/<pid>/stat, in steps of
// 10 ms.
func pidCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(data))
}

// parseStatCPU extracts utime + stime (fields 14 and 15) from a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: unexpected /proc stat line %q", stat)
	}
	fields := strings.Fields(stat[i+1:]) // fields[0] is field 3, the state
	if len(fields) < 13 {
		return 0, fmt.Errorf("bench: short /proc stat line %q", stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc stat field %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// machineCPU reads the first line of /proc/stat: the CPU time of every core together, and the
// part of it spent busy (all but idle and iowait).
func machineCPU() (busy, total time.Duration, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseMachineCPU(string(data))
}

// parseMachineCPU extracts busy and total time from /proc/stat's "cpu" line (user nice system
// idle iowait irq softirq steal …, in clock ticks).
func parseMachineCPU(stat string) (busy, total time.Duration, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("bench: unexpected /proc/stat line %q", line)
	}
	var ticks, idle int64
	for i, f := range fields[1:min(len(fields), 9)] { // guest time is already in user
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: /proc/stat field %q: %w", f, err)
		}
		ticks += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	tick := time.Second / clockTicks
	return time.Duration(ticks-idle) * tick, time.Duration(ticks) * tick, nil
}

// isRedisServer reports whether pid is a redis-server process on this machine (the server a run
// measures may be elsewhere: then its CPU is not read).
func isRedisServer(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(comm)), "redis-server")
}

// cpuUse is what a span of a run cost in CPU time beside the runners' own (which they measure
// themselves): the bridge server's and the Redis server's, and the machine's, busy out of total
// over all cores. Each counter comes with whether it was read (a process that was not measured,
// or whose /proc entry could not be read, is not reported; a real 0 is).
type cpuUse struct {
	bridge, redis     time.Duration
	busy, total       time.Duration
	bridgeOK, redisOK bool
	machineOK         bool
}

// cpuSample reads the counters behind cpuUse once; pids of 0 are not read.
func cpuSample(bridgePid, redisPid int) cpuUse {
	var s cpuUse
	var err error
	if bridgePid > 0 {
		s.bridge, err = pidCPU(bridgePid)
		s.bridgeOK = err == nil
	}
	if redisPid > 0 {
		s.redis, err = pidCPU(redisPid)
		s.redisOK = err == nil
	}
	s.busy, s.total, err = machineCPU()
	s.machineOK = err == nil
	return s
}

// since is the CPU used from sample s0 to s; a counter is read only when it was read both times.
func (s cpuUse) since(s0 cpuUse) cpuUse {
	return cpuUse{
		bridge: s.bridge - s0.bridge, redis: s.redis - s0.redis,
		busy: s.busy - s0.busy, total: s.total - s0.total,
		bridgeOK: s.bridgeOK && s0.bridgeOK, redisOK: s.redisOK && s0.redisOK,
		machineOK: s.machineOK && s0.machineOK,
	}
}

// measureCPU samples the CPU counters at the window's opening (at) and returns a function that
// samples them again and returns the use over the span. bridgePid or redisPid 0: not measured.
func measureCPU(ctx context.Context, bridgePid, redisPid int, at time.Time) func() cpuUse {
	first := make(chan cpuUse, 1)
	go func() {
		waitUntil(ctx, unixMs(at))
		first <- cpuSample(bridgePid, redisPid)
	}()
	return func() cpuUse {
		s0 := <-first
		return cpuSample(bridgePid, redisPid).since(s0)
	}
}

// setCPU fills r's CPU columns from use over a span in which executes calls were made:
// bridge is whether the bridge server's CPU belongs to r, redis whether the Redis server's does
// (it serves every implementation of a mixed scenario at once).
func (r *Result) setCPU(use cpuUse, executes int, bridge, redis bool) {
	per1k := func(d time.Duration) *float64 {
		if executes == 0 {
			return nil
		}
		return ptr(round(ms(d)/float64(executes)*1000, 1))
	}
	if bridge && use.bridgeOK {
		r.BridgeCPUMsPer1k = per1k(use.bridge)
	}
	if redis && use.redisOK {
		r.RedisCPUMsPer1k = per1k(use.redis)
	}
	if use.machineOK && use.total > 0 {
		r.MachineBusy = ptr(round(float64(use.busy)/float64(use.total), 3))
	}
}
