// Package tailbuf keeps the last bytes written to an io.Writer: a bounded record of a child
// process's output for error messages and test logs.
package tailbuf

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps the last Max bytes written to it. It is safe for
// concurrent use (os/exec copies stdout and stderr from two goroutines).
type Buffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// New returns a Buffer keeping the last max bytes; max < 1 keeps nothing.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the tail of p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max < 1 {
		return len(p), nil
	}
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns everything kept, trimmed of surrounding white space.
func (b *Buffer) String() string { return b.Last(b.max) }

// Last returns at most the last n bytes kept, trimmed of surrounding white space.
func (b *Buffer) Last(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.buf
	if n < 0 {
		n = 0
	}
	if len(tail) > n {
		tail = tail[len(tail)-n:]
	}
	return strings.TrimSpace(string(tail))
}

// LastLines returns at most the last n lines kept, joined by sep: a child's output on one line
// of an error message.
func (b *Buffer) LastLines(n int, sep string) string {
	lines := strings.Split(b.String(), "\n")
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, sep)
}
