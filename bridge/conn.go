package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

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
)

// outFrame is one frame for the writer: a text message, or (closeCode != 0) a close frame after
// which the writer stops.
type outFrame struct {
	data      []byte
	closeCode int
	closeText string
}

// closeReason is why the reader stopped: a policy close to send (code != 0), and whether
// gorilla already sent it.
type closeReason struct {
	code int
	text string
	sent bool
	tag  string // metric label
}

// inflight is a request being served. cancel is set for the requests that wait (a queued
// acquire, a lease) and ends that wait.
type inflight struct {
	cancel context.CancelCauseFunc
}

// leaseEntry is a lease held for this connection.
type leaseEntry struct {
	lease *provider.Lease
	lost  bool // a renewal found it lost; lease_lost was pushed
}

// conn is one client connection: a reader (readPump, in run), a writer (writePump), one
// goroutine per request in flight and one watcher per lease.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	token  Token
	log    *slog.Logger
	limits Limits

	ctx    context.Context // parent of every request; ends with the connection
	cancel context.CancelCauseFunc

	out        chan outFrame
	writerDone chan struct{} // closed when writePump returns
	quit       chan struct{} // closed to stop writePump
	quitOnce   sync.Once
	finished   chan struct{} // closed when run returns

	requests  sync.WaitGroup // request goroutines
	watchers  sync.WaitGroup // lease watchers
	releasing sync.WaitGroup // lease releases of the ending connection, also those given up on

	mu            sync.Mutex
	inflight      map[string]*inflight // by idKey, until the reply is queued
	running       int                  // requests admitted whose reply is not queued yet
	leases        map[string]*leaseEntry
	leasesPending int // lease requests in flight, counted against MaxLeases
	nextLease     uint64
	stopping      bool // the server shuts down: new requests get shutting_down
	closing       bool // the connection ends: leases are released, none is added

	released   atomic.Int64 // leases released because the connection ended
	unreleased atomic.Int64 // leases of the ending connection whose release has not finished

	// Reader-only state: the budget of invalid frames.
	badFrames float64
	badAt     time.Time
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
		finished:   make(chan struct{}),
		inflight:   map[string]*inflight{},
		leases:     map[string]*leaseEntry{},
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	return c
}

// run serves the connection until it ends, then releases what it holds.
func (c *conn) run() {
	defer c.s.forget(c)
	defer close(c.finished)
	c.log.Info("connection opened", "owner_prefix", c.token.OwnerPrefix)
	c.out <- outFrame{data: c.s.welcome(c.token)} // first frame; the queue is empty
	go c.writePump()
	reason := c.readPump()
	if reason.code != 0 {
		if reason.code != websocket.CloseInternalServerErr {
			c.s.metrics.policy.WithLabelValues(reason.tag).Inc()
			c.log.Warn("closing a connection that broke the protocol", "code", reason.code, "reason", reason.text)
		}
		if !reason.sent {
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(reason.code, reason.text),
				time.Now().Add(writeWait))
		}
		c.drain()
	}
	c.end(context.Background(), errConnClosed)
	c.stopWriter()
	_ = c.ws.Close()
	c.requests.Wait()
	c.watchers.Wait()
	c.releasing.Wait()
	c.log.Info("connection closed", "leases_released", c.released.Load())
}

// readPump reads frames until the connection fails or breaks the protocol.
func (c *conn) readPump() closeReason {
	c.ws.SetReadLimit(int64(c.limits.MaxFrameBytes))
	c.extendDeadline()
	c.ws.SetPongHandler(func(string) error { c.extendDeadline(); return nil })
	answerPing := c.ws.PingHandler()
	c.ws.SetPingHandler(func(data string) error { c.extendDeadline(); return answerPing(data) })
	for {
		typ, r, err := c.ws.NextReader()
		var data []byte
		if err == nil {
			data, err = io.ReadAll(r)
		}
		if errors.Is(err, websocket.ErrReadLimit) {
			return closeReason{code: websocket.CloseMessageTooBig, sent: true, tag: closeReasonTooLarge,
				text: "frame larger than max_frame_bytes"}
		}
		if err != nil {
			c.log.Debug("connection read ended", "error", err)
			return closeReason{}
		}
		c.extendDeadline()
		if typ == websocket.BinaryMessage {
			return closeReason{code: websocket.CloseUnsupportedData, tag: closeReasonBinary,
				text: "binary frames are not supported: send JSON text frames"}
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
// are released as for any close, and the bridge and its other connections go on.
func (c *conn) recoverInternal() {
	if r := recover(); r != nil {
		c.logPanic(r)
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseInternalServerErr, internalErrorText), time.Now().Add(writeWait))
		_ = c.ws.Close()
	}
}

func (c *conn) logPanic(r any) {
	c.log.Error("internal error; closing the connection", "panic", r, "stack", string(debug.Stack()))
}

// extendDeadline gives the client another PongWait to send something (a pong or a frame).
func (c *conn) extendDeadline() {
	_ = c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.PongWait))
}

// drain discards what the client still sends after a policy close until it closes its side or
// closeGrace passes, so that closing the socket does not reset it before the client has read
// the close frame.
func (c *conn) drain() {
	nc := c.ws.NetConn()
	_ = nc.SetReadDeadline(time.Now().Add(closeGrace))
	_, _ = io.Copy(io.Discard, nc)
}

// writePump is the only writer of data frames and pings.
func (c *conn) writePump() {
	ticker := time.NewTicker(c.s.cfg.PingPeriod)
	defer func() {
		ticker.Stop()
		close(c.writerDone)
	}()
	for {
		select {
		case f := <-c.out:
			if f.closeCode != 0 {
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(f.closeCode, f.closeText),
					time.Now().Add(writeWait))
				return
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
				c.log.Debug("write failed; dropping the connection", "error", err)
				_ = c.ws.Close() // ends the reader too
				return
			}
		case <-ticker.C:
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.log.Debug("ping failed; dropping the connection", "error", err)
				_ = c.ws.Close()
				return
			}
		case <-c.quit:
			return
		}
	}
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
	}
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

// reply answers a request and counts it.
func (c *conn) reply(op string, id json.RawMessage, result any, err *Error) {
	label := resultOK
	if err != nil {
		label = string(err.Code)
		c.sendJSON(errResponse(id, err))
	} else {
		c.sendJSON(okResponse(id, result))
	}
	c.s.metrics.requests.WithLabelValues(op, label).Inc()
}

// allowBadFrame charges one invalid frame to the connection's budget and reports whether the
// connection may go on.
func (c *conn) allowBadFrame() bool {
	now := time.Now()
	if !c.badAt.IsZero() {
		c.badFrames = max(0, c.badFrames-float64(now.Sub(c.badAt))/float64(badFrameRefill))
	}
	c.badAt = now
	c.badFrames++
	return c.badFrames <= float64(c.s.cfg.MaxBadFrames)
}
