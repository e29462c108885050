package bench

import (
	"strings"
	"testing"
)

// A key held for more of the window than the window holds is reported as a problem: the
// detectors of overlaps see only what their counters see, the holds' sum sees every holder.
func TestProblemsReportsAKeyHeldLongerThanTheWindow(t *testing.T) {
	busy := func(v float64) Result {
		return Result{Name: "multi_go_stock", Impl: "all", LockBusy: &v, WaitMs: &Quantiles{Count: 10}}
	}
	if got := problems(busy(0.97)); len(got) != 0 {
		t.Errorf("problems(97 %% busy) = %q, want none", got)
	}
	got := problems(busy(1.5))
	if len(got) != 1 || !strings.Contains(got[0], "multi_go_stock/all: the key was held 150 % of the window") {
		t.Errorf("problems(150 %% busy) = %q, want the key held 150 %% of the window", got)
	}
}
