package bridge

import (
	"encoding/json"
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
func TestBatchWriterSendsOneFrameAsItIsAndSeveralAsAnArray(t *testing.T) {
	var w batchWriter
	require.True(t, w.empty())
	w.add([]byte(`{"id":1}`))
	require.Equal(t, `{"id":1}`, string(w.frame()), "one frame goes as it is")
	w.reset()
	for i := range 3 {
		w.add([]byte(`{"id":` + string(rune('1'+i)) + `}`))
	}
	var batch []map[string]int
	require.NoError(t, json.Unmarshal(w.frame(), &batch))
	require.Equal(t, []map[string]int{{"id": 1}, {"id": 2}, {"id": 3}}, batch, "several go as one array, in order")
	w.reset()
	require.True(t, w.empty())
	w.add([]byte(`{"id":9}`))
	require.Equal(t, `{"id":9}`, string(w.frame()), "a reset writer starts afresh")
}
