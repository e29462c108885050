package bridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
)

// sessionIDBytes is the size of a session id; it is sent as twice as many hex digits.
const sessionIDBytes = 16

// maxSessionBytes bounds the replies one session keeps (a reply may name keys of up to
// max_frame_bytes): beyond it the oldest are dropped, and a resume reports them unknown.
const maxSessionBytes = 1 << 20

// session remembers what became of a connection's requests, so that a client whose connection
// broke can learn the outcome of the requests it had in flight (resume) instead of sending them
// again blindly. It lives as long as its connection, then ResumeWindow more, and can be resumed
// once.
type session struct {
	id     string
	secret string // the token's, so that only the same token may resume it
	conn   *conn

	mu      sync.Mutex
	replies map[string]record // by idKey, the last keep replies
	order   []string          // idKeys of replies, oldest first
	keep    int
	bytes   int   // of the replies kept
	maxID   int64 // the highest integer id received, -1 before any
}

// record is the outcome of one request.
type record struct {
	state outcomeState    // stateReplied or stateCancelled
	reply json.RawMessage // the reply without its id
	// lease: a lease was granted. A resume releases every lease of the old connection, so it
	// reports the request as cancelled.
	lease bool
}

func newSessionID() string {
	b := make([]byte, sessionIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// received notes the arrival of a request id.
func (s *session) received(id json.RawMessage) {
	n, ok := integerID(id)
	if !ok {
		return
	}
	s.mu.Lock()
	s.maxID = max(s.maxID, n)
	s.mu.Unlock()
}

// integerID reads a non-negative integer id.
func integerID(id json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	return n, err == nil && n >= 0
}

// remember records the outcome of a request, dropping the oldest records beyond keep of them
// or maxSessionBytes.
func (s *session) remember(key string, r record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, dup := s.replies[key]; dup {
		s.bytes -= len(old.reply)
	} else {
		s.order = append(s.order, key)
	}
	s.replies[key] = r
	s.bytes += len(r.reply)
	for len(s.order) > s.keep || (s.bytes > maxSessionBytes && len(s.order) > 1) {
		s.bytes -= len(s.replies[s.order[0]].reply)
		delete(s.replies, s.order[0])
		s.order = s.order[1:]
	}
}

// outcomes reports what became of ids; the connection's requests have all finished.
func (s *session) outcomes(ids []json.RawMessage) []outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]outcome, 0, len(ids))
	for _, id := range ids {
		o := outcome{ID: id, State: stateUnknown}
		if r, ok := s.replies[idKey(id)]; ok {
			o.State = r.state
			if r.lease {
				o.State = stateCancelled
			}
			if o.State == stateReplied {
				o.Reply = r.reply
			}
		} else if n, ok := integerID(id); ok && n > s.maxID {
			o.State = stateNotReceived
		}
		out = append(out, o)
	}
	return out
}

// sessions is the server's registry of sessions.
type sessions struct {
	window    time.Duration
	maxClosed int // sessions kept after their connection ended; beyond it the oldest goes
	mu        sync.Mutex
	byID      map[string]*session
	closed    []*session // in the order their connections ended
}

// open registers the session of a new connection.
func (r *sessions) open(c *conn, secret string, keep int) *session {
	s := &session{id: newSessionID(), secret: secret, conn: c, replies: map[string]record{}, keep: keep, maxID: -1}
	r.mu.Lock()
	r.byID[s.id] = s
	r.mu.Unlock()
	return s
}

// ended starts the resume window of a session whose connection ended. At most maxClosed such
// sessions are kept (a client that opens and closes connections in a loop cannot pile them up):
// beyond it the oldest is dropped, and resuming it answers known:false.
func (r *sessions) ended(s *session) {
	r.mu.Lock()
	if r.byID[s.id] != s { // resumed already
		r.mu.Unlock()
		return
	}
	r.closed = append(r.closed, s)
	for len(r.closed) > r.maxClosed {
		r.dropLocked(r.closed[0])
	}
	r.mu.Unlock()
	time.AfterFunc(r.window, func() { r.drop(s) })
}

func (r *sessions) drop(s *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(s)
}

func (r *sessions) dropLocked(s *session) {
	if r.byID[s.id] == s {
		delete(r.byID, s.id)
	}
	if i := slices.Index(r.closed, s); i >= 0 {
		r.closed = slices.Delete(r.closed, i, i+1)
	}
}

// take hands the session id over to a resume by a connection of the token secret, once; nil
// when the session is unknown, was resumed already or belongs to another token.
func (r *sessions) take(id, secret string, by *conn) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byID[id]
	if s == nil || s.conn == by || subtle.ConstantTimeCompare([]byte(s.secret), []byte(secret)) != 1 {
		return nil
	}
	r.dropLocked(s)
	return s
}

// resume answers a resume request of connection c: it ends the session's old connection (its
// leases are released at once: the client holds none of them), waits for its requests to finish
// and reports their outcomes.
func (c *conn) resume(ctx context.Context, id string, ids []json.RawMessage) resumeResult {
	s := c.s.sessions.take(id, c.token.Secret, c)
	if s == nil {
		return resumeResult{Known: false}
	}
	old := s.conn
	old.takeOver()
	select {
	case <-old.answered:
	case <-ctx.Done():
		return resumeResult{Known: false}
	}
	return resumeResult{Known: true, Outcomes: s.outcomes(ids)}
}
