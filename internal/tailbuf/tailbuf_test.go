package tailbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/locktui/locktui/internal/tailbuf"
)

func TestBufferKeepsTheTail(t *testing.T) {
	b := tailbuf.New(8)
	n, err := b.Write([]byte("  hello "))
	assert.NoError(t, err)
	assert.Equal(t, 8, n)
	assert.Equal(t, "hello", b.String(), "trimmed")

	_, _ = b.Write([]byte("world"))
	assert.Equal(t, "lo world", b.String(), "only the last 8 bytes are kept")
	assert.Equal(t, "rld", b.Last(3))
	assert.Equal(t, "", b.Last(0))

	n, _ = b.Write([]byte("0123456789abcdef"))
	assert.Equal(t, 16, n, "a write longer than the buffer still reports every byte written")
	assert.Equal(t, "89abcdef", b.String())
}

func TestBufferZeroMaxKeepsNothing(t *testing.T) {
	b := tailbuf.New(0)
	n, err := b.Write([]byte("x"))
	assert.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, b.String())
}

func TestLastLines(t *testing.T) {
	b := tailbuf.New(1 << 10)
	for i := range 8 {
		fmt.Fprintf(b, "line %d\n\n", i)
	}
	assert.Equal(t, "line 5 | line 6 | line 7", b.LastLines(3, " | "))
	assert.Equal(t, "", tailbuf.New(10).LastLines(3, " | "))
}

func TestBufferConcurrentWrites(t *testing.T) {
	b := tailbuf.New(64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("abcd"))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("abcd", 16), b.String(), "whole writes of 4 bytes, the last 64 bytes kept")
}
