package bridge

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeRecorder is a net.Conn that records its writes.
type writeRecorder struct {
	net.Conn
	writes [][]byte
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

// Writes made while the writer holds go out together, in order, in one write at flush; other
// writes go out at once.
func TestBatchConnSendsHeldWritesInOneWrite(t *testing.T) {
	rec := &writeRecorder{}
	b := &batchConn{Conn: rec}
	_, _ = b.Write([]byte("a"))
	require.Equal(t, [][]byte{[]byte("a")}, rec.writes)
	b.hold()
	_, _ = b.Write([]byte("b"))
	_, _ = b.Write([]byte("c"))
	require.Len(t, rec.writes, 1, "held writes went out before flush")
	require.NoError(t, b.flush())
	require.Equal(t, [][]byte{[]byte("a"), []byte("bc")}, rec.writes)
	require.NoError(t, b.flush(), "a flush with nothing held writes nothing")
	_, _ = b.Write([]byte("d"))
	require.Equal(t, [][]byte{[]byte("a"), []byte("bc"), []byte("d")}, rec.writes)
}
