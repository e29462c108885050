package cli

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// Once the conn is closed, no warning reaches the command's stderr: a probe of the provider's
// that was in flight when the client closed logs from its own goroutine, after the command may
// have returned (a data race on a test's stderr buffer showed it).
func TestNoWarningIsWrittenOnceTheConnIsClosed(t *testing.T) {
	srv := redistest.Start(t)
	var stderr bytes.Buffer
	s := (&App{Stderr: &stderr, Getenv: func(string) string { return "" }}).newSession()
	c, err := s.connect(t.Context(), &options{url: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(&warnHandler{w: &stderr, gate: c.warnings}).With("key", "k")
	log.Warn("before")
	c.Close()
	log.Warn("after")
	if got, want := stderr.String(), "locktui: warning: before key=k\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}
