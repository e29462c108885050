package bench

import (
	"os"
	"testing"
	"time"
)

var statCases = []struct {
	line string
	want time.Duration
}{
	{"1234 (bridge) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 31 0 0 20 0 8 0 100 0 0", 2810 * time.Millisecond},
	{"77 (a (weird) name) R 1 77 77 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0", 30 * time.Millisecond},
}

func TestParseStatCPUAddsUtimeAndStime(t *testing.T) {
	for _, c := range statCases {
		got, err := parseStatCPU(c.line)
		if err != nil || got != c.want {
			t.Errorf("parseStatCPU(%q) = %v, %v, want %v", c.line, got, err, c.want)
		}
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Error("parseStatCPU(garbage) did not fail")
	}
}

func TestPidCPUReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := pidCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestParseMachineCPUTellsBusyFromIdleAndSteal(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice, in ticks of 10 ms
	got, err := parseMachineCPU("cpu  100 20 30 400 50 6 4 90 99 99\ncpu0 1 2 3 4 5 6 7 8\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (machineTimes{busy: 1600 * time.Millisecond, steal: 900 * time.Millisecond, total: 7000 * time.Millisecond}); got != want {
		t.Errorf("parseMachineCPU = %+v, want %+v", got, want)
	}
	if _, err := parseMachineCPU("intr 1 2 3\n"); err == nil {
		t.Error("parseMachineCPU(intr line) did not fail")
	}
}

func TestMachineCPUReadsThisMachine(t *testing.T) {
	m, err := machineCPU()
	if err != nil || m.total <= 0 || m.busy+m.steal > m.total {
		t.Fatalf("machineCPU() = %+v, %v", m, err)
	}
}

// setCost charges each counter that was read per 1,000 executes, only to the rows it belongs to,
// and the table shows "-" for a part not measured.
func TestSetCostChargesWhatWasMeasured(t *testing.T) {
	use := windowCost{bridge: 300 * time.Millisecond, redis: redisStats{cpu: 0},
		machine:  machineTimes{busy: 1500 * time.Millisecond, steal: 400 * time.Millisecond, total: 2400 * time.Millisecond},
		bridgeOK: true, redisOK: true, machineOK: true}
	client := 40.0
	cases := []struct {
		name          string
		bridge, redis bool
		use           windowCost
		cell          string
		busy          string
	}{
		{"bridge row", true, true, use, "40.0 / 150 / 0.00", "75 % / 17 %"},
		{"go row", false, true, use, "40.0 / - / 0.00", "75 % / 17 %"},
		{"a row of a mixed scenario", false, false, use, "40.0", "75 % / 17 %"},
		{"nothing read", true, true, windowCost{}, "40.0", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Result{CPUMsPer1k: &client}
			r.setCost(c.use, 2000, 0, c.bridge, c.redis)
			if got := cpuCell(r); got != c.cell {
				t.Errorf("cpuCell = %q, want %q", got, c.cell)
			}
			if got := machineCell(r); got != c.busy {
				t.Errorf("machine busy = %q, want %q", got, c.busy)
			}
		})
	}
	stolen := Result{}
	stolen.setCost(windowCost{machine: machineTimes{steal: time.Second, total: time.Second}, machineOK: true}, 10, 0, false, false)
	if stolen.MachineBusy != nil {
		t.Errorf("a window the hypervisor took whole: machine busy = %v, want none (not NaN)", *stolen.MachineBusy)
	}
	r := Result{}
	r.setCost(use, 2000, 0, true, true)
	if got := cpuCell(r); got != "- / 150 / 0.00" {
		t.Errorf("cpuCell without the client's = %q, want \"- / 150 / 0.00\"", got)
	}
}

// setCost charges the Redis server's commands and the keys left to the rows of every process
// only, and leaves the jobs' INCR and DECR and the bench's INFO out of the lock's commands.
func TestSetCostChargesRedisCommandsAndKeysLeft(t *testing.T) {
	use := windowCost{
		redis: redisStats{cpu: 3 * time.Second, calls: map[string]int64{
			"evalsha": 2000, "set": 1000, "get": 1000, "del": 1000, "incr": 900, "decr": 900, "info": 2,
		}},
		keys:    keysLeft{Count: 3, NoTTL: 1, Sample: []string{"a", "b", "c"}},
		redisOK: true, keysOK: true,
	}
	r := Result{}
	r.setCost(use, 1000, 900, false, true)
	if r.RedisCmdsPerExec == nil || *r.RedisCmdsPerExec != 5 {
		t.Errorf("RedisCmdsPerExec = %v, want 5", r.RedisCmdsPerExec)
	}
	if got := r.RedisCmds["incr"]; got != 0.9 {
		t.Errorf("RedisCmds[incr] = %v, want 0.9 (the breakdown keeps the jobs' commands)", got)
	}
	if _, ok := r.RedisCmds["info"]; ok {
		t.Error("RedisCmds has the bench's INFO")
	}
	if r.RedisCPUMsPer1k == nil || *r.RedisCPUMsPer1k != 3000 {
		t.Errorf("RedisCPUMsPer1k = %v, want 3000", r.RedisCPUMsPer1k)
	}
	if r.KeysLeft == nil || *r.KeysLeft != 3 || r.KeysLeftNoTTL == nil || *r.KeysLeftNoTTL != 1 {
		t.Errorf("keys left = %v, %v, want 3, 1", r.KeysLeft, r.KeysLeftNoTTL)
	}
	if got, want := keysCell(r), "3 (1 without TTL)"; got != want {
		t.Errorf("keysCell = %q, want %q", got, want)
	}
	mixed := Result{}
	mixed.setCost(use, 1000, 900, false, false)
	if mixed.RedisCmdsPerExec != nil || mixed.KeysLeft != nil {
		t.Error("a row of one implementation of a mixed scenario was charged the server's commands or keys")
	}
	if got := keysCell(mixed); got != "" {
		t.Errorf("keysCell of an unmeasured row = %q, want empty", got)
	}
}
