package sleep_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/sleep"
)

func TestForReportsWhetherTheWholeDurationPassed(t *testing.T) {
	if !sleep.For(t.Context(), time.Millisecond) {
		t.Fatal("For(live ctx, 1ms) = false, want true")
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if sleep.For(ended, 0) {
		t.Fatal("For(ended ctx, 0) = true, want false")
	}
	if sleep.For(ended, time.Hour) {
		t.Fatal("For(ended ctx, 1h) = true, want false")
	}
}
