package bridge

import (
	"crypto/tls"
	"net"
	"sync"

	"github.com/gorilla/websocket"
)

// Bounds of what the writer sends in one write: frames taken from its queue, and the bytes of
// one batch frame (a batch that reaches it is sent, and the next frames start another).
const (
	maxBatchFrames = 64
	maxBatchBytes  = 64 << 10
)

// batchWriter gathers text frames (JSON objects) into one frame: the first as it is, several as
// a JSON array of them. Its buffer is kept between batches, unless a burst made it large.
type batchWriter struct {
	buf []byte // "[" then the frames, separated by commas
	n   int    // frames gathered
	one []byte // the frame, while there is one
}

// add appends one frame.
func (w *batchWriter) add(frame []byte) {
	if w.n == 0 {
		w.one = frame
	} else {
		if w.n == 1 {
			w.buf = append(append(w.buf[:0], '['), w.one...)
		}
		w.buf = append(append(w.buf, ','), frame...)
	}
	w.n++
}

// full reports whether the batch has reached maxBatchBytes.
func (w *batchWriter) full() bool { return len(w.buf) >= maxBatchBytes }

// empty reports whether no frame was gathered.
func (w *batchWriter) empty() bool { return w.n == 0 }

// frame returns the frame to send: valid until reset.
func (w *batchWriter) frame() []byte {
	if w.n == 1 {
		return w.one
	}
	return append(w.buf, ']')
}

// reset empties w for the next batch.
func (w *batchWriter) reset() {
	w.n, w.one = 0, nil
	if cap(w.buf) > 4*maxBatchBytes {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
}

// batchListener wraps every accepted connection in a batchConn.
type batchListener struct{ net.Listener }

func (l batchListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &batchConn{Conn: nc}, nil
}

// batchConn is a server connection whose writes the connection's writer can hold and then send
// in one write: the frames it finds queued together (replies that one Redis pipeline answered,
// say) cost one system call and, on loopback, one wake-up of the client, instead of one per
// frame. Under TLS it sits below the TLS layer, so records are held the same way.
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	held    []byte
}

// Write sends p, or keeps it for flush while the writer holds.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holding {
		b.held = append(b.held, p...)
		return len(p), nil
	}
	return b.Conn.Write(p)
}

// hold keeps the writes that follow until flush.
func (b *batchConn) hold() {
	b.mu.Lock()
	b.holding = true
	b.mu.Unlock()
}

// flush sends what was held in one write and stops holding.
func (b *batchConn) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holding = false
	if len(b.held) == 0 {
		return nil
	}
	_, err := b.Conn.Write(b.held)
	if cap(b.held) > 4*maxFrameHold {
		b.held = nil // a burst of large frames: do not keep its buffer
	} else {
		b.held = b.held[:0]
	}
	return err
}

// maxFrameHold is the buffer a batchConn keeps between batches.
const maxFrameHold = 16 << 10

// batchConnOf returns the batchConn under ws, or nil when it has none (a connection served by
// a handler outside Serve).
func batchConnOf(ws *websocket.Conn) *batchConn {
	nc := ws.NetConn()
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	b, _ := nc.(*batchConn)
	return b
}
