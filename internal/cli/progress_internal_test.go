package cli

import (
	"os"
	"testing"
)

// /dev/null is a character device, as a terminal is, but no terminal: list 2>/dev/null writes
// no progress line to it.
func TestProgressIsNotWrittenToDevNull(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = devNull.Close() })
	s := (&App{Stderr: devNull}).newSession()
	if w := s.progressWriter(); w != nil {
		t.Fatalf("progressWriter() with stderr %s = %v, want nil: it is not a terminal", os.DevNull, w)
	}
}
