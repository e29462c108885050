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

// windowCost is what a span of a run cost beside the runners' own CPU (which they measure
// themselves): the bridge server's CPU, the Redis server's counters (its CPU and the commands
// it ran) and the machine's busy time out of its total over all cores; and what the run left in
// Redis. Each part comes with whether it was read (a part that was not measured, or could not be
// read, is not reported; a real 0 is).
type windowCost struct {
	bridge  time.Duration
	redis   redisStats
	machine machineTimes
	keys    keysLeft

	bridgeOK, redisOK bool
	machineOK, keysOK bool
}

// costSample reads the counters behind windowCost once; a bridgePid of 0 or a nil probe is not
// read.
func costSample(ctx context.Context, bridgePid int, probe *redisProbe) windowCost {
	var s windowCost
	var err error
	if bridgePid > 0 {
		s.bridge, err = pidCPU(bridgePid)
		s.bridgeOK = err == nil
	}
	if probe != nil {
		s.redis, err = probe.stats(ctx)
		s.redisOK = err == nil
	}
	s.machine, err = machineCPU()
	s.machineOK = err == nil
	return s
}

// since is the cost from sample s0 to s; a counter is read only when it was read both times.
func (s windowCost) since(s0 windowCost) windowCost {
	return windowCost{
		bridge: s.bridge - s0.bridge,
		redis:  s.redis.since(s0.redis),
		machine: machineTimes{
			busy:  s.machine.busy - s0.machine.busy,
			steal: s.machine.steal - s0.machine.steal,
			total: s.machine.total - s0.machine.total,
		},
		bridgeOK: s.bridgeOK && s0.bridgeOK, redisOK: s.redisOK && s0.redisOK,
		machineOK: s.machineOK && s0.machineOK,
	}
}

// measureWindow samples the counters at the window's opening (at) and returns a function that
// samples them again and returns the cost of the span. bridgePid 0 or a nil probe: not
// measured.
func measureWindow(ctx context.Context, bridgePid int, probe *redisProbe, at time.Time) func() windowCost {
	first := make(chan windowCost, 1)
	go func() {
		waitUntil(ctx, unixMs(at))
		first <- costSample(ctx, bridgePid, probe)
	}()
	return func() windowCost {
		s0 := <-first
		return costSample(ctx, bridgePid, probe).since(s0)
	}
}

// setCost fills r's cost columns from the cost of a span in which executes calls were made, jobs
// of them running the counter's INCR and DECR (0 without a counter): bridge is whether the
// bridge server's CPU belongs to r, redis whether the Redis server's counters and the keys left
// do (the server serves every implementation of a mixed scenario at once).
func (r *Result) setCost(use windowCost, executes, jobs int, bridge, redis bool) {
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
		r.RedisCPUMsPer1k = per1k(use.redis.cpu)
		if executes > 0 {
			r.RedisCmdsPerExec = ptr(round(float64(lockCommands(use.redis.calls, jobs))/float64(executes), 2))
			r.RedisCmds = map[string]float64{}
			for name, n := range use.redis.calls {
				if name != infoCommand {
					r.RedisCmds[name] = round(float64(n)/float64(executes), 3)
				}
			}
		}
	}
	if redis && use.keysOK {
		r.KeysLeft = ptr(use.keys.Count)
		r.KeysLeftNoTTL = ptr(use.keys.NoTTL)
		r.KeysLeftSample = use.keys.Sample
	}
	if m := use.machine; use.machineOK && m.total > m.steal {
		r.MachineBusy = ptr(round(float64(m.busy)/float64(m.total-m.steal), 3))
		r.MachineSteal = ptr(round(float64(m.steal)/float64(m.total), 3))
	}
}
