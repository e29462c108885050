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
