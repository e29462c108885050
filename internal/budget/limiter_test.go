package budget

import (
	"testing"
	"time"
)

func TestLimiterPacesToBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(1000) // burst 100
	l.now = func() time.Time { return now }
	if d := l.Take(100); d != 0 {
		t.Fatalf("Take(burst) = %v, want 0", d)
	}
	if d := l.Take(201); d != 201*time.Millisecond {
		t.Fatalf("Take(201) in debt = %v, want 201ms", d)
	}
	now = now.Add(201 * time.Millisecond)
	if d := l.Take(0); d != 0 {
		t.Fatalf("after waiting the debt off: Take(0) = %v, want 0", d)
	}
	// Over a long run the rate converges on the budget: 10 s of batches of 201 commands.
	sent, elapsed := 0, time.Duration(0)
	for elapsed < 10*time.Second {
		d := l.Take(201)
		sent += 201
		now = now.Add(d)
		elapsed += d
	}
	if rate := float64(sent) / elapsed.Seconds(); rate > 1000*1.03 {
		t.Fatalf("rate = %.0f commands/s, want at most the budget of 1000 (+ one batch)", rate)
	}
	if d := New(0).Take(1 << 30); d != 0 {
		t.Fatalf("unlimited Take = %v, want 0", d)
	}
}
