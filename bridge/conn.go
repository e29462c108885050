package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/locktui/locktui/provider"
)

// Connection deadlines and buffers.
const (
	// writeWait bounds the write of one frame; a client that does not read for this long is
	// dropped rather than allowed to hold up its requests.
	writeWait = 10 * time.Second
	// closeGrace is how long the bridge waits for the client's answer to its close frame.
	closeGrace = time.Second
	// releaseTimeout bounds the release of one lease when its connection ends.
	releaseTimeout = 5 * time.Second
	// releaseWorkers bounds the parallel lease releases of one ending connection.
	releaseWorkers = 8
	// sendBuffer is the writer's queue; when it is full the connection's readers and requests
	// wait for the writer, which slows this client only.
	sendBuffer = 64
	// badFrameRefill is the time after which one more invalid frame is tolerated.
	badFrameRefill = time.Second
)

// Causes that end the context of a request.
var (
	errShuttingDown = errors.New("bridge: shutting down")
	errCancelled    = errors.New("bridge: cancelled by the client")
	errConnClosed   = errors.New("bridge: connection closed")
	errResumed      = errors.New("bridge: session resumed on another connection")
)

// frameKind says what the writer does with an outFrame.
type frameKind int

const (
	textFrame  frameKind = iota
	pongFrame            // answer to a WebSocket ping
	closeFrame           // the last frame: the writer stops after it
)

// outFrame is one frame for the writer.
type outFrame struct {
	kind frameKind
	data []byte // text or pong payload
	code int    // of a close frame
	text string // of a close frame
	slot bool   // the reply of a request holding an in-flight slot: see frameTaken
}

// closeReason is why the reader stopped: a policy close to send (code != 0).
type closeReason struct {
	code int
	text string
	tag  string // metric label
}

// conn is one client connection: a reader (readPump, in run), a writer (writePump, the only
// goroutine that writes to the socket), one goroutine per request in flight (reused, see
// workers) and one watcher per lease.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	token  Token
	holder provider.Holder // the client's process, for the holder records (ClientHeader)
	log    *slog.Logger
	limits Limits
	sess   *session

	// ctx is the parent of the waits (a queued acquire, a lease); it ends with the connection.
	// Other requests run to completion under the server's context.
	ctx    context.Context
	cancel context.CancelCauseFunc

	out        chan outFrame
	writerDone chan struct{} // closed when writePump returns
	quit       chan struct{} // closed to stop writePump
	quitOnce   sync.Once
	answered   chan struct{} // closed once the ended connection's requests are all answered
	releaseNow chan struct{} // closed when the client has said it holds none of the leases
	nowOnce    sync.Once
	changed    chan struct{} // signalled when a request or a lease ends (for the drain)
	finished   chan struct{} // closed when run returns

	requests   sync.WaitGroup // requests running
	workers    *workers       // the goroutines that run them
	watchers   sync.WaitGroup // lease watchers
	background sync.WaitGroup // lease releases and their retries

	mu            sync.Mutex
	inflight      map[string]*inflight // by idKey, until the reply is queued
	order         keyOrder             // the connection's waiting requests, per key, in the order sent
	running       int                  // requests admitted whose reply is not queued yet
	leases        map[string]*leaseEntry
	leasesPending int     // lease requests in flight, counted against MaxLeases
	renewals      float64 // key renewals per second of the leases held and pending
	nextLease     uint64
	releasingAll  bool      // a release_all runs
	stopping      bool      // the server shuts down: new acquire and lease get shutting_down
	closing       bool      // the connection ended: no lease is added
	clean         bool      // the client said it holds none of the leases (close 1000, resume)
	lastReceived  time.Time // when the last frame arrived

	badFrames *rate.Limiter // reader only
}

// inflight is a request being served. cancel is set for the requests that wait (a queued
// acquire, a lease) and ends that wait.
type inflight struct {
	cancel context.CancelCauseFunc
}

func newConn(s *Server, ws *websocket.Conn, token Token, log *slog.Logger) *conn {
	c := &conn{
		s:          s,
		ws:         ws,
		token:      token,
		log:        log,
		limits:     s.cfg.Limits,
		out:        make(chan outFrame, sendBuffer),
		writerDone: make(chan struct{}),
		quit:       make(chan struct{}),
		answered:   make(chan struct{}),
		releaseNow: make(chan struct{}),
		changed:    make(chan struct{}, 1),
		finished:   make(chan struct{}),
		inflight:   map[string]*inflight{},
		leases:     map[string]*leaseEntry{},
		badFrames:  rate.NewLimiter(rate.Every(badFrameRefill), s.cfg.MaxBadFrames),
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.workers = newWorkers(c.ctx.Done())
	c.sess = s.sessions.open(c, token.Secret, c.limits.MaxInFlight)
	return c
}

// run serves the connection until it ends, then releases what it holds.
func (c *conn) run() {
	defer c.s.forget(c)
	defer close(c.finished)
	c.log.Info("connection opened", "owner_prefix", c.token.OwnerPrefix, "key_prefix", c.token.KeyPrefix)
	c.touch()
	go c.writePump(c.s.welcome(c.token, c.sess.id))
	reason := c.readPump()
	if reason.code != 0 {
		if reason.code != websocket.CloseInternalServerErr {
			c.s.metrics.policy.WithLabelValues(reason.tag).Inc()
			c.log.Warn("closing a connection that broke the protocol", "code", reason.code, "reason", reason.text)
		}
		c.closeWith(reason.code, reason.text)
		c.drain()
	}
	c.end()
	c.stopWriter()
	for dropped := true; dropped; { // replies the writer never took: their slots are free
		select {
		case f := <-c.out:
			c.frameTaken(f)
		default:
			dropped = false
		}
	}
	_ = c.ws.Close()
	c.requests.Wait()
	c.workers.wait()
	c.watchers.Wait()
	c.background.Wait()
	c.log.Info("connection closed")
}

// readPump reads frames until the connection fails, goes silent for ClientTimeout or breaks
// the protocol.
func (c *conn) readPump() closeReason {
	c.ws.SetCloseHandler(func(code int, _ string) error {
		if code == websocket.CloseNormalClosure {
			c.saidClean()
		}
		echo := code
		if code == websocket.CloseNoStatusReceived {
			echo = websocket.CloseNormalClosure
		}
		c.closeWith(echo, "")
		return nil
	})
	c.ws.SetPingHandler(func(data string) error {
		c.touch()
		c.send(outFrame{kind: pongFrame, data: []byte(data)})
		return nil
	})
	c.ws.SetPongHandler(func(string) error { c.touch(); return nil })
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.log.Info("connection silent for the client timeout; ending it", "timeout", c.s.cfg.ClientTimeout)
			} else {
				c.log.Debug("connection read ended", "error", err)
			}
			return closeReason{}
		}
		c.touch()
		if typ == websocket.BinaryMessage {
			return closeReason{code: websocket.CloseUnsupportedData, tag: closeReasonBinary,
				text: "binary frames are not supported: send JSON text frames"}
		}
		// The frame limit is applied here rather than by the WebSocket library, so that the
		// close frame goes through the writer like every other.
		data, err := io.ReadAll(io.LimitReader(r, int64(c.limits.MaxFrameBytes)+1))
		if err != nil {
			c.log.Debug("connection read ended", "error", err)
			return closeReason{}
		}
		if len(data) > c.limits.MaxFrameBytes {
			return closeReason{code: websocket.CloseMessageTooBig, tag: closeReasonTooLarge,
				text: "frame larger than max_frame_bytes"}
		}
		keep, crashed := c.handleSafely(data)
		if crashed {
			return closeReason{code: websocket.CloseInternalServerErr, text: internalErrorText}
		}
		if !keep {
			return closeReason{code: websocket.ClosePolicyViolation, tag: closeReasonFlood,
				text: "too many invalid frames"}
		}
	}
}

// touch notes that a frame arrived: the client has another ClientTimeout to send the next one,
// and the connection's leases are not freed before then.
func (c *conn) touch() {
	now := time.Now()
	c.mu.Lock()
	c.lastReceived = now
	c.mu.Unlock()
	_ = c.ws.SetReadDeadline(now.Add(c.s.cfg.ClientTimeout))
}

// saidClean records that the client holds none of the connection's leases.
func (c *conn) saidClean() {
	c.mu.Lock()
	c.clean = true
	c.mu.Unlock()
	c.nowOnce.Do(func() { close(c.releaseNow) })
}

// internalErrorText is the reason of a 1011 close.
const internalErrorText = "internal error in the bridge"

// handleSafely is handleFrame with a bug in the bridge confined to this connection.
func (c *conn) handleSafely(data []byte) (keep, crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
			keep, crashed = false, true
		}
	}()
	return c.handleFrame(data), false
}

// recoverInternal, deferred by the connection's request and watcher goroutines, turns a panic
// (a bug in the bridge or in an Observer) into a 1011 close of this connection alone: its leases
// are freed as for any unclean end, and the bridge and its other connections go on.
func (c *conn) recoverInternal() {
	if r := recover(); r != nil {
		c.logPanic(r)
		c.closeWith(websocket.CloseInternalServerErr, internalErrorText)
		time.AfterFunc(closeGrace, func() { _ = c.ws.NetConn().Close() })
	}
}

func (c *conn) logPanic(r any) {
	c.log.Error("internal error; closing the connection", "panic", r, "stack", string(debug.Stack()))
}

// drain discards what the client still sends after a policy close until it closes its side or
// closeGrace passes, so that closing the socket does not reset it before the client has read
// the close frame.
func (c *conn) drain() {
	nc := c.ws.NetConn()
	_ = nc.SetReadDeadline(time.Now().Add(closeGrace))
	_, _ = io.Copy(io.Discard, nc)
}

// writePump is the only writer of the socket: text frames, pongs and the close frame. The
// frames it finds queued together go out in one write (see batchConn), the text frames among
// them as one batch frame (see writeQueued). The welcome goes first, in a frame of its own.
func (c *conn) writePump(welcome []byte) {
	defer close(c.writerDone)
	batch := batchConnOf(c.ws)
	var w batchWriter
	w.add(welcome)
	if !c.writeBatch(&w) {
		return
	}
	for {
		select {
		case f := <-c.out:
			if batch != nil {
				batch.hold()
			}
			ok := c.writeQueued(&w, f)
			if batch != nil {
				if err := batch.flush(); err != nil && ok {
					c.writeFailed(err)
					return
				}
			}
			if !ok {
				return
			}
		case <-c.quit:
			return
		}
	}
}

// writeQueued writes first and the frames queued behind it, at most maxBatchFrames: the text
// frames (replies and events) ready together leave as one batch frame, a JSON array, in the
// order queued, and a control frame among them after the texts before it. False means the
// writer stops (see write).
func (c *conn) writeQueued(w *batchWriter, first outFrame) bool {
	f := first
	for n := 1; ; n++ {
		c.frameTaken(f)
		if f.kind == textFrame {
			w.add(f.data)
		} else if !c.writeBatch(w) || !c.write(f) {
			return false
		}
		if n == maxBatchFrames || w.full() {
			break
		}
		next, more := c.queued()
		if !more {
			break
		}
		f = next
	}
	return c.writeBatch(w)
}

// queued returns the next frame queued for the writer, if there is one.
func (c *conn) queued() (outFrame, bool) {
	select {
	case f := <-c.out:
		return f, true
	default:
		return outFrame{}, false
	}
}

// writeBatch writes the text frames gathered in w, one as it is and several as a batch; false
// means the write failed and the connection is dropped.
func (c *conn) writeBatch(w *batchWriter) bool {
	if w.empty() {
		return true
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	err := c.ws.WriteMessage(websocket.TextMessage, w.frame())
	w.reset()
	if err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// write writes one control frame; false means the writer stops (a close frame, or the write
// failed and the connection is dropped).
func (c *conn) write(f outFrame) bool {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	if f.kind == closeFrame {
		_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(f.code, f.text))
		return false
	}
	if err := c.ws.WriteMessage(websocket.PongMessage, f.data); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// writeFailed drops the connection after a failed write.
func (c *conn) writeFailed(err error) {
	c.log.Debug("write failed; dropping the connection", "error", err)
	_ = c.ws.NetConn().Close() // ends the reader too
}

func (c *conn) stopWriter() {
	c.quitOnce.Do(func() { close(c.quit) })
	<-c.writerDone
}

// send queues a frame for the writer; it is dropped when the writer is gone.
func (c *conn) send(f outFrame) {
	select {
	case c.out <- f:
	case <-c.writerDone:
		c.frameTaken(f)
	}
}

// frameTaken frees the in-flight slot of a reply the writer took (or dropped).
func (c *conn) frameTaken(f outFrame) {
	if !f.slot {
		return
	}
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	c.signalChange()
}

// closeWith queues a close frame: the writer sends it after the frames queued before and stops.
func (c *conn) closeWith(code int, text string) {
	c.send(outFrame{kind: closeFrame, code: code, text: text})
}

// sendJSON queues v as a text frame.
func (c *conn) sendJSON(v any) {
	data, err := json.Marshal(v)
	if err != nil { // cannot happen with the protocol's types
		c.log.Error("encode a frame", "error", err)
		return
	}
	c.send(outFrame{data: data})
}

// allowBadFrame charges one invalid frame to the connection's budget and reports whether the
// connection may go on.
func (c *conn) allowBadFrame() bool { return c.badFrames.Allow() }

// signalChange wakes a drain waiting for the connection to become idle.
func (c *conn) signalChange() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}
