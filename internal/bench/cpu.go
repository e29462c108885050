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

// machineTimes is the CPU time of every core together, from /proc/stat: what this machine ran
// (busy), what the hypervisor gave to other machines while this one wanted to run (steal), and
// the whole.
type machineTimes struct{ busy, steal, total time.Duration }

// machineCPU reads the first line of /proc/stat.
func machineCPU() (machineTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{}, err
	}
	return parseMachineCPU(string(data))
}

// parseMachineCPU reads /proc/stat's "cpu" line (user nice system idle iowait irq softirq steal
// guest guest_nice, in clock ticks; guest time is already counted in user): busy is all but
// idle, iowait and steal.
func parseMachineCPU(stat string) (machineTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return machineTimes{}, fmt.Errorf("bench: unexpected /proc/stat line %q", line)
	}
	var ticks [8]int64
	for i, f := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return machineTimes{}, fmt.Errorf("bench: /proc/stat field %q: %w", f, err)
		}
		ticks[i] = n
	}
	var total int64
	for _, n := range ticks {
		total += n
	}
	const idle, iowait, steal = 3, 4, 7
	tick := time.Second / clockTicks
	return machineTimes{
		busy:  time.Duration(total-ticks[idle]-ticks[iowait]-ticks[steal]) * tick,
		steal: time.Duration(ticks[steal]) * tick,
		total: time.Duration(total) * tick,
	}, nil
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
	machine           machineTimes
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
	s.machine, err = machineCPU()
	s.machineOK = err == nil
	return s
}

// since is the CPU used from sample s0 to s; a counter is read only when it was read both times.
func (s cpuUse) since(s0 cpuUse) cpuUse {
	return cpuUse{
		bridge: s.bridge - s0.bridge, redis: s.redis - s0.redis,
		machine: machineTimes{
			busy:  s.machine.busy - s0.machine.busy,
			steal: s.machine.steal - s0.machine.steal,
			total: s.machine.total - s0.machine.total,
		},
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
	if m := use.machine; use.machineOK && m.total > m.steal {
		r.MachineBusy = ptr(round(float64(m.busy)/float64(m.total-m.steal), 3))
		r.MachineSteal = ptr(round(float64(m.steal)/float64(m.total), 3))
	}
}
