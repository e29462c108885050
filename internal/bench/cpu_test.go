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

func TestMachineCPUAndRedisServerCheckReadThisMachine(t *testing.T) {
	m, err := machineCPU()
	if err != nil || m.total <= 0 || m.busy+m.steal > m.total {
		t.Fatalf("machineCPU() = %+v, %v", m, err)
	}
	if isRedisServer(os.Getpid()) {
		t.Error("isRedisServer(the test's own pid) = true")
	}
}

// setCPU charges each counter that was read per 1,000 executes, only to the rows it belongs to,
// and the table shows "-" for a part not measured.
func TestSetCPUChargesWhatWasMeasured(t *testing.T) {
	use := cpuUse{bridge: 300 * time.Millisecond, redis: 0,
		machine:  machineTimes{busy: 1500 * time.Millisecond, steal: 400 * time.Millisecond, total: 2400 * time.Millisecond},
		bridgeOK: true, redisOK: true, machineOK: true}
	client := 40.0
	cases := []struct {
		name          string
		bridge, redis bool
		use           cpuUse
		cell          string
		busy          string
	}{
		{"bridge row", true, true, use, "40.0 / 150 / 0.00", "75 % / 17 %"},
		{"go row", false, true, use, "40.0 / - / 0.00", "75 % / 17 %"},
		{"a row of a mixed scenario", false, false, use, "40.0", "75 % / 17 %"},
		{"nothing read", true, true, cpuUse{}, "40.0", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Result{CPUMsPer1k: &client}
			r.setCPU(c.use, 2000, c.bridge, c.redis)
			if got := cpuCell(r); got != c.cell {
				t.Errorf("cpuCell = %q, want %q", got, c.cell)
			}
			if got := machineCell(r); got != c.busy {
				t.Errorf("machine busy = %q, want %q", got, c.busy)
			}
		})
	}
	stolen := Result{}
	stolen.setCPU(cpuUse{machine: machineTimes{steal: time.Second, total: time.Second}, machineOK: true}, 10, false, false)
	if stolen.MachineBusy != nil {
		t.Errorf("a window the hypervisor took whole: machine busy = %v, want none (not NaN)", *stolen.MachineBusy)
	}
	r := Result{}
	r.setCPU(use, 2000, true, true)
	if got := cpuCell(r); got != "- / 150 / 0.00" {
		t.Errorf("cpuCell without the client's = %q, want \"- / 150 / 0.00\"", got)
	}
}

// The Redis server's CPU is read only when its URL is a loopback address: a remote server's
// process id may be a local process's.
func TestOnlyALoopbackRedisIsOnThisMachine(t *testing.T) {
	for url, want := range map[string]bool{
		"redis://127.0.0.1:6390": true, "redis://localhost:6390/0": true, "redis://[::1]:6390": true,
		"redis://10.0.0.5:6379": false, "redis://redis.internal:6379": false, "not a url": false,
	} {
		if got := onThisMachine(url); got != want {
			t.Errorf("onThisMachine(%q) = %v, want %v", url, got, want)
		}
	}
}
