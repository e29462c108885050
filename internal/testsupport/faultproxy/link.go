package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// side is one socket of a link.
type side int

const (
	clientSide side = iota // the socket accepted from the client
	serverSide             // the socket dialled to the target
)

// src returns the side the bytes of direction dir come from.
func src(dir Direction) side {
	if dir == Upstream {
		return clientSide
	}
	return serverSide
}

// dst returns the side the bytes of direction dir go to.
func dst(dir Direction) side { return 1 - src(dir) }

// chunkSize is the most one read from a sender takes.
const chunkSize = 32 << 10

// chunk is what one read from a sender gave, and when it is due at the receiver.
type chunk struct {
	data []byte
	due  time.Time
	end  error // not nil: the sender's stream ended here (io.EOF: a FIN)
}

// queue holds the chunks of one direction that were read and not yet delivered. Its reader
// and its writer wake each other through ready and room.
type queue struct {
	mu     sync.Mutex
	chunks []chunk
	size   int           // bytes in chunks
	ready  chan struct{} // a chunk was queued
	room   chan struct{} // a chunk left
}

// link is one client connection and its connection to the target. Each direction has a
// reader goroutine (sender to queue, applying the mode) and a writer goroutine (queue to
// receiver, each chunk at its due time), so a delay never holds up reading and the order of
// chunks is the order they were read in.
type link struct {
	p     *Proxy
	conns [2]net.Conn   // by side
	q     [2]queue      // by Direction
	wmu   [2]sync.Mutex // by Direction: held by the writer while it writes to the receiver
	dead  chan struct{} // closed at the first cut: from then on nothing is delivered

	mu     sync.Mutex
	closed [2]bool // by side: closed by the proxy
	eof    [2]bool // by Direction: the sender's FIN was passed on
	lose   func()  // not nil: the next bytes from the server are a reply to lose
}

func newLink(p *Proxy, client, server net.Conn) *link {
	l := &link{p: p, dead: make(chan struct{})}
	l.conns[clientSide], l.conns[serverSide] = client, server
	for i := range l.q {
		l.q[i].ready = make(chan struct{}, 1)
		l.q[i].room = make(chan struct{}, 1)
	}
	return l
}

// read moves what the sender of direction dir sends into the queue until its socket ends.
// After a cut it keeps reading the surviving side and discards what it reads.
func (l *link) read(dir Direction) {
	from := l.conns[src(dir)]
	buf := make([]byte, chunkSize)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			if dir == Downstream && l.withhold() {
				return
			}
			l.push(dir, chunk{data: buf[:n]})
		}
		if err != nil {
			l.ended(dir, err)
			return
		}
	}
}

// push queues c (copying its data) unless the direction is blackholed or the link is dead. It
// waits while the queue is full.
func (l *link) push(dir Direction, c chunk) {
	m, limit := l.p.settings(dir)
	if m.blackhole || l.isDead() {
		return
	}
	c.due = time.Now().Add(m.delay)
	c.data = bytes.Clone(c.data)
	q := &l.q[dir]
	q.mu.Lock()
	for q.size >= limit {
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-l.dead:
			return
		}
		q.mu.Lock()
	}
	q.chunks = append(q.chunks, c)
	q.size += len(c.data)
	q.mu.Unlock()
	signal(q.ready)
}

// ended handles the end of the sender's stream in direction dir.
func (l *link) ended(dir Direction, err error) {
	l.mu.Lock()
	ours := l.closed[src(dir)]
	l.mu.Unlock()
	switch {
	case ours: // the proxy closed it
	case l.isDead(): // the surviving side of a one-sided cut went away too
		l.cut(clientSide, serverSide)
	default: // passed on after the bytes before it
		l.push(dir, chunk{end: err})
	}
}

// write delivers the chunks of direction dir to its receiver, each at its due time, until the
// link is dead or the stream ended.
func (l *link) write(dir Direction) {
	q := &l.q[dir]
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		c, ok := l.next(q)
		if !ok {
			return
		}
		if wait := time.Until(c.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-l.dead:
				return
			}
		}
		if !l.writeChunk(dir, c) {
			return
		}
		q.shift()
	}
}

// writeChunk delivers c to the receiver of direction dir, unless the direction is blackholed
// now, and reports whether the writer goes on.
func (l *link) writeChunk(dir Direction, c chunk) bool {
	if m, _ := l.p.settings(dir); m.blackhole {
		return true // blackholed since it was queued; a FIN is swallowed too
	}
	if c.end != nil {
		l.passEnd(dir, c.end)
		return false
	}
	if dir == Upstream {
		if hold, ok := l.p.claim(c.data); ok {
			l.mu.Lock()
			l.lose = hold // before the write: the reply cannot come earlier
			l.mu.Unlock()
		}
	}
	return l.deliver(dir, func(to net.Conn) error {
		_, err := to.Write(c.data)
		return err
	})
}

// next returns the first chunk of q, waiting for one, and leaves it queued (counted against
// the limit) until the writer shifts it; false when the link is dead.
func (l *link) next(q *queue) (chunk, bool) {
	for {
		if l.isDead() {
			return chunk{}, false
		}
		q.mu.Lock()
		if len(q.chunks) > 0 {
			c := q.chunks[0]
			q.mu.Unlock()
			return c, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-l.dead:
			return chunk{}, false
		}
	}
}

// shift removes the first chunk of q, once it was delivered or dropped.
func (q *queue) shift() {
	q.mu.Lock()
	q.size -= len(q.chunks[0].data)
	q.chunks[0] = chunk{}
	q.chunks = q.chunks[1:]
	q.mu.Unlock()
	signal(q.room)
}

// deliver runs op on the receiver of direction dir unless the link is dead, and reports whether
// it succeeded. A receiver that fails ends the link.
func (l *link) deliver(dir Direction, op func(to net.Conn) error) bool {
	l.wmu[dir].Lock()
	if l.isDead() {
		l.wmu[dir].Unlock()
		return false
	}
	err := op(l.conns[dst(dir)])
	l.wmu[dir].Unlock()
	if err != nil {
		if !l.isDead() { // not a write the proxy aborted with a cut
			l.cut(clientSide, serverSide)
		}
		return false
	}
	return true
}

// passEnd passes the end of the sender's stream on to the receiver of direction dir: a FIN as a
// half-close, any other error by closing the link. The link is closed once both directions
// have ended.
func (l *link) passEnd(dir Direction, end error) {
	if !errors.Is(end, io.EOF) {
		l.cut(clientSide, serverSide)
		return
	}
	ok := l.deliver(dir, func(to net.Conn) error {
		if cw, ok := to.(interface{ CloseWrite() error }); ok {
			return cw.CloseWrite()
		}
		return to.Close()
	})
	if !ok {
		return
	}
	l.mu.Lock()
	l.eof[dir] = true
	both := l.eof[Upstream] && l.eof[Downstream]
	l.mu.Unlock()
	if both {
		l.cut(clientSide, serverSide)
	}
}

// withhold, when a request armed LoseReplyTo on this link, loses the reply whose first bytes
// just arrived: it runs the hold, then cuts both sides. It reports whether it did.
func (l *link) withhold() bool {
	l.mu.Lock()
	hold := l.lose
	l.lose = nil
	l.mu.Unlock()
	if hold == nil {
		return false
	}
	l.p.countLost()
	hold()
	l.cut(clientSide, serverSide)
	return true
}

// cut closes the given sides. The link is dead from then on: nothing more is delivered to a
// side left open, not even a write in progress when cut was called, which is aborted and
// waited for.
func (l *link) cut(sides ...side) {
	l.mu.Lock()
	if !l.isDead() {
		close(l.dead)
	}
	for _, s := range sides {
		if !l.closed[s] {
			l.closed[s] = true
			_ = l.conns[s].Close()
		}
	}
	closed := l.closed
	l.mu.Unlock()
	if closed[clientSide] && closed[serverSide] {
		l.p.remove(l)
		return
	}
	for _, dir := range []Direction{Upstream, Downstream} {
		if s := dst(dir); !closed[s] {
			// Abort a write in progress, and wait for it to return.
			_ = l.conns[s].SetWriteDeadline(time.Now())
			l.wmu[dir].Lock()
			l.wmu[dir].Unlock()
		}
	}
}

// isDead reports whether the link was cut.
func (l *link) isDead() bool {
	select {
	case <-l.dead:
		return true
	default:
		return false
	}
}

// signal wakes the goroutine waiting on ch, if any, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
