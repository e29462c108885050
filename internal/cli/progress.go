package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/textfmt"
)

// Pacing of list's progress line: nothing for a walk shorter than progressAfter (most lists),
// then one rewrite of the line per progressEvery.
const (
	progressAfter = time.Second
	progressEvery = time.Second
)

// walkProgress tells an operator how far a paced walk of the namespace has come, on one line of
// stderr that it rewrites, when stderr is a terminal (App.Progress says where otherwise): on a
// database of millions of keys list takes minutes, and a silent one looks hung. It reads the
// database's size (DBSIZE, one command) once the walk has lasted progressAfter.
type walkProgress struct {
	w      io.Writer // nil: no progress is shown
	client redis.UniversalClient
	start  time.Time
	now    func() time.Time

	mu    sync.Mutex
	total int64 // the database's keys, 0 until read (or when unknown)
	asked bool  // DBSIZE was sent: it is asked once, also when it fails (an ACL may refuse it)
	last  time.Time
	shown bool
}

// walkProgress returns the progress of a walk that starts now with client, timed by now (the
// walk's budget's clock: Limiter.Now).
func (s *session) walkProgress(client redis.UniversalClient, now func() time.Time) *walkProgress {
	return &walkProgress{w: s.progressWriter(), client: client, start: now(), now: now}
}

// progressWriter is where progress goes: App.Progress, else stderr when it is a terminal, else
// nowhere (a script or cron job gets no progress lines in its logs).
func (s *session) progressWriter() io.Writer {
	if s.app.Progress != nil {
		return s.app.Progress
	}
	stderr := s.app.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(f.Fd()) {
		return f // a terminal, not any character device: /dev/null is one too
	}
	return nil
}

// examined is the callback of list's pacedScan: the walk's SCANs have examined about keys keys.
func (p *walkProgress) examined(ctx context.Context, keys int64) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if now.Sub(p.start) < progressAfter || now.Sub(p.last) < progressEvery {
		return
	}
	if !p.asked {
		p.asked = true
		if n, err := p.client.DBSize(ctx).Result(); err == nil {
			p.total = n
		}
	}
	p.last, p.shown = now, true
	text := fmt.Sprintf("locktui: listing: scanned ~%s keys", textfmt.Count(int(keys)))
	if p.total > 0 {
		text = fmt.Sprintf("locktui: listing: scanned ~%s of %s keys (%d%%)", textfmt.Count(int(min(keys, p.total))),
			textfmt.Count(int(p.total)), min(keys, p.total)*100/p.total)
	}
	fmt.Fprint(p.w, "\r"+text+"\x1b[K")
}

// done clears the progress line, if one was shown, before the list is printed.
func (p *walkProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
