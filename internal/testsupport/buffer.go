package testsupport

import (
	"bytes"
	"sync"
)

// Buffer collects a command's or a process's output while it runs: a bytes.Buffer that the
// writing goroutines and the test reading it may share.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
