package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/locktui/locktui/provider"
)

// timedOutMessage is the answer to a lease whose wait the client cancelled: stock's timeout
// (see docs/bridge-protocol.md, cancel), as the provider defines it.
const timedOutMessage = provider.TimedOutMessage

// handleFrame decodes and dispatches one text frame: a request, or a batch of them handled one
// by one in order, as if each had come in a frame of its own. It reports false when the
// connection has used up its budget of invalid frames and must be closed.
func (c *conn) handleFrame(frame []byte) bool {
	requests, batch, err := splitBatch(frame)
	if !batch {
		return c.handleRequest(frame)
	}
	if err != nil {
		c.reply(Request{}, nil, err)
		return c.allowBadFrame()
	}
	for _, r := range requests {
		if !c.handleRequest(r) {
			return false
		}
	}
	return true
}

// handleRequest decodes and dispatches one request; false as for handleFrame. An invalid
// request is charged to the connection's budget of invalid frames.
func (c *conn) handleRequest(frame []byte) bool {
	req, err := DecodeRequest(frame)
	if err != nil {
		var perr *Error
		if !errors.As(err, &perr) {
			perr = newError(CodeBadRequest, err.Error())
		}
		c.reply(req, nil, perr)
		return c.allowBadFrame()
	}
	c.sess.received(req.ID)
	if len(req.Keys) > c.limits.MaxKeys {
		c.reply(req, nil, newError(CodeTooManyKeys,
			fmt.Sprintf("too many keys in one request: %d, the limit is %d", len(req.Keys), c.limits.MaxKeys)))
		return true
	}
	if err := c.checkRequest(req); err != nil {
		c.reply(req, nil, err)
		return true
	}
	c.start(req)
	return true
}

// immediate reports whether op is answered at once, outside the in-flight limit.
func immediate(op Op) bool { return op == OpPing || op == OpCancel || op == OpResume }

// isWait reports whether req waits for keys: it is cancellable, and ends with its connection.
func isWait(req Request) bool { return req.Op == OpLease || (req.Op == OpAcquire && req.AwaitQueue) }

// start admits a request and serves it: ping and cancel at once, every other op in a goroutine
// of its own (see workers), within the connection's limits.
func (c *conn) start(req Request) {
	key := idKey(req.ID)
	var renewals float64
	if req.Op == OpLease {
		renewals = leaseRenewals(req.Keys, c.leaseExpire(req.Expire))
	}
	c.mu.Lock()
	var refuse *Error
	switch {
	case c.stopping && (req.Op == OpAcquire || req.Op == OpLease):
		refuse = newError(CodeShuttingDown, "the bridge is shutting down: nothing was done, send the request to the next bridge")
	case c.inflight[key] != nil:
		refuse = newError(CodeDuplicateID, fmt.Sprintf("id %s is already in flight on this connection", req.ID))
	case immediate(req.Op):
	case c.running >= c.limits.MaxInFlight:
		refuse = newError(CodeTooManyRequests,
			fmt.Sprintf("too many requests in flight on this connection: the limit is %d", c.limits.MaxInFlight))
	case req.Op == OpReleaseAll && c.releasingAll:
		refuse = newError(CodeTooManyRequests, "a release_all is already running on this connection: wait for its reply")
	case req.Op == OpLease && len(c.leases)+c.leasesPending >= c.limits.MaxLeases:
		refuse = newError(CodeTooManyLeases,
			fmt.Sprintf("too many leases on this connection: the limit is %d", c.limits.MaxLeases))
	case req.Op == OpLease && c.renewals+renewals > float64(c.limits.MaxRenewalsPerSecond):
		refuse = newError(CodeTooManyRenewals, fmt.Sprintf(
			"the lease would renew %.0f keys per second on this connection, the limit is %d: use fewer keys per lease, a longer expire or fewer leases",
			c.renewals+renewals, c.limits.MaxRenewalsPerSecond))
	}
	if refuse != nil || req.Op == OpPing || req.Op == OpCancel {
		c.mu.Unlock()
		switch {
		case refuse != nil:
			c.reply(req, nil, refuse)
		case req.Op == OpPing:
			c.reply(req, c.pingResult(), nil)
		default:
			c.reply(req, cancelledResult{Cancelled: c.cancelRequest(req.Target)}, nil)
		}
		return
	}
	parent := c.s.ctx // runs to completion, even after the connection ended
	if isWait(req) || req.Op == OpResume {
		// A resume waits for another connection's requests: it must not outlive its own
		// connection, or two connections resuming each other's session wait for each other.
		parent = c.ctx
	}
	ctx, cancel := context.WithCancelCause(parent)
	entry := &inflight{}
	var t *turn
	var behind []<-chan struct{}
	var release *barrier
	switch {
	case isWait(req):
		entry.cancel = cancel
		// Its place among this connection's waits, before the next frame is read.
		t = c.order.enter(req.Keys)
	case len(req.Keys) > 0:
		behind = c.order.behind(req.Keys)
	case req.Op == OpLeaseRelease:
		if e := c.leases[req.Lease]; e != nil {
			release = c.order.releasing(e.lease.Keys())
		}
	}
	c.inflight[key] = entry
	if !immediate(req.Op) {
		c.running++
	}
	switch req.Op {
	case OpLease:
		c.leasesPending++
		c.renewals += renewals
	case OpReleaseAll:
		c.releasingAll = true
	}
	c.requests.Add(1)
	c.mu.Unlock()
	c.workers.run(func() {
		defer c.requests.Done()
		defer c.recoverInternal()
		defer cancel(nil)
		if t != nil {
			defer c.order.leave(t) // after the reply is queued, and also when the request panics
		}
		if release != nil {
			defer c.order.lift(release)
		}
		if behind != nil {
			// A request that does not wait waits for nothing but the releases sent before it; ctx
			// ending first (the server stops) lets the provider answer.
			_ = awaitAll(ctx, behind, 0)
		}
		result, err := c.do(ctx, req, renewals, t)
		c.mu.Lock()
		delete(c.inflight, key) // before the reply: the client may reuse the id once answered
		if req.Op == OpReleaseAll {
			c.releasingAll = false
		}
		c.mu.Unlock()
		c.finish(ctx, req, result, err)
		if grant, ok := result.(leaseResult); ok && grant.watch != nil {
			grant.watch() // after the grant: see leaseResult.watch
		}
	})
}

// finish records the outcome of a request in the session and sends its reply.
func (c *conn) finish(ctx context.Context, req Request, result any, err *Error) {
	body := c.replyTo(req, result, err, !immediate(req.Op))
	if req.Op == OpResume {
		return
	}
	r := record{state: stateReplied, reply: body, lease: req.Op == OpLease && err == nil}
	if isWait(req) && err != nil && endedByConnection(ctx) &&
		(err.Code == CodeNotAcquired || err.Code == CodeTimedOut || err.Code == CodeShuttingDown) {
		r = record{state: stateCancelled} // the wait was given back, claim-checked
	}
	c.sess.remember(idKey(req.ID), r)
}

// endedByConnection reports whether ctx ended because its connection did.
func endedByConnection(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, errConnClosed) || errors.Is(cause, errResumed)
}

// replyBody is a response without its id.
type replyBody struct {
	OK     bool       `json:"ok"`
	Result any        `json:"result,omitempty"`
	Error  *errorBody `json:"error,omitempty"`
}

// reply answers a request that holds no in-flight slot, counts it and returns the reply's body
// (without the id).
func (c *conn) reply(req Request, result any, err *Error) json.RawMessage {
	return c.replyTo(req, result, err, false)
}

// replyTo is reply; slot says that the request holds an in-flight slot, which the writer frees
// as it takes the reply (before the client can read it, so that a client answered may send
// again at once), and not before: a client that does not read its replies cannot pile up
// goroutines waiting for the writer.
func (c *conn) replyTo(req Request, result any, err *Error, slot bool) json.RawMessage {
	op, label := string(req.Op), resultOK
	if op == "" {
		op = opInvalid
	}
	b := replyBody{OK: err == nil, Result: result}
	if err != nil {
		label = string(err.Code)
		b.Error = err.body()
	}
	c.s.metrics.requests.WithLabelValues(op, label).Inc()
	body, merr := json.Marshal(b)
	if merr != nil { // cannot happen with the protocol's types
		c.log.Error("encode a reply", "error", merr)
		return nil
	}
	id := req.ID
	if id == nil {
		id = nullID
	}
	frame := make([]byte, 0, len(body)+len(id)+8)
	frame = append(frame, `{"id":`...)
	frame = append(frame, id...)
	frame = append(frame, ',')
	frame = append(frame, body[1:]...)
	c.send(outFrame{data: frame, slot: slot})
	return body
}

// cancelRequest ends the wait of an in-flight acquire or lease; other requests finish on their
// own and are not cancelled.
func (c *conn) cancelRequest(target []byte) bool {
	c.mu.Lock()
	r := c.inflight[idKey(target)]
	c.mu.Unlock()
	if r == nil || r.cancel == nil {
		return false
	}
	r.cancel(errCancelled)
	return true
}

// do runs one op.
func (c *conn) do(ctx context.Context, req Request, renewals float64, t *turn) (any, *Error) {
	switch req.Op {
	case OpAcquire:
		return c.acquire(ctx, req, t)
	case OpRelease:
		released, err := c.s.prov.Release(ctx, req.Keys, req.Owner)
		return releasedResult{Released: released}, mapError(ctx, err)
	case OpReleaseAll:
		n, err := c.s.prov.ReleaseAll(ctx, req.Owner)
		return countResult{Count: n}, mapError(ctx, err)
	case OpSettle:
		tokens, err := c.s.prov.SettleTokens(ctx, req.Keys, req.Owner, req.Claim)
		return newSettleResult(tokens), mapError(ctx, err)
	case OpLease:
		result, err := c.lease(ctx, req, renewals, t)
		if grant, ok := result.(leaseResult); ok {
			// The client may find the lease lost by itself (its link dead): it then aborts the
			// job with this message instead of composing stock's text.
			grant.LostMessage = provider.LockLostMessage(req.Keys)
			result = grant
		}
		return result, err
	case OpLeaseRelease:
		return c.leaseRelease(ctx, req.Lease)
	case OpResume:
		return c.resume(ctx, req.Session, req.IDs), nil
	default: // DecodeRequest admits no other op
		return nil, newError(CodeUnknownOp, "unknown op "+quote(string(req.Op)))
	}
}

// acquire runs an acquire; t is its turn among the connection's waits (nil when it does not
// wait).
func (c *conn) acquire(ctx context.Context, req Request, t *turn) (any, *Error) {
	if req.AwaitQueue && req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	if t != nil {
		// A wait for the turn that ctx ends goes to the provider all the same: its answer to
		// an ended wait (a ConflictError naming the key) is this request's.
		_ = c.order.wait(ctx, t, 0)
	}
	// A queued acquire keeps its turn until it is done (no Queued): acquires name their owner,
	// and two waits of one owner that overlap could re-enter each other's keys, so that the
	// give-back of the later one put back the earlier one's lock after both failed.
	tokens, err := c.s.prov.AcquireTokens(ctx, req.Keys, provider.AcquireOptions{
		Owner: req.Owner, Expire: provider.StockAcquireExpire(req.Expire), AwaitQueue: req.AwaitQueue, Claim: req.Claim, Holder: c.holder})
	if err != nil {
		return nil, mapError(ctx, err)
	}
	return fencingOf(tokens), nil
}

// checkRequest enforces the token's owner and key prefixes on every op that names them.
func (c *conn) checkRequest(req Request) *Error {
	switch req.Op {
	case OpAcquire, OpRelease, OpReleaseAll, OpSettle:
		if err := c.checkOwner(req.Owner); err != nil {
			return err
		}
	}
	prefix := c.token.KeyPrefix
	if prefix == "" {
		return nil
	}
	if req.Op == OpReleaseAll {
		return newError(CodeKeyForbidden, fmt.Sprintf(
			"release_all is not allowed for a token restricted to keys starting with %s: it would release keys outside the prefix; release the keys by name",
			quote(prefix)))
	}
	for _, k := range req.Keys {
		if !strings.HasPrefix(k, prefix) {
			return newError(CodeKeyForbidden, fmt.Sprintf("key %s is not allowed for this token: keys must start with %s",
				quote(k), quote(prefix)))
		}
	}
	return nil
}

// checkOwner enforces the token's owner prefix; "" stands for the anonymous owner "*".
func (c *conn) checkOwner(owner string) *Error {
	prefix := c.token.OwnerPrefix
	if prefix == "" {
		return nil
	}
	if owner == "" {
		owner = provider.DefaultOwner
	}
	if !strings.HasPrefix(owner, prefix) {
		return newError(CodeOwnerForbidden, fmt.Sprintf("owner %s is not allowed for this token: owners must start with %s",
			quote(owner), quote(prefix)))
	}
	return nil
}

// errorCodes maps what a provider error matches (errors.Is, first match wins) to its code. A
// wait that ends without its keys is a provider.ConflictError wrapping what ended it, so a wait
// the drain cut short matches errShuttingDown, and ErrOutcomeUnknown comes before both: such a
// request may have left keys behind.
var errorCodes = []struct {
	match error
	code  Code
}{
	{provider.ErrOutcomeUnknown, CodeOutcomeUnknown},
	{errShuttingDown, CodeShuttingDown},
	{provider.ErrNotAcquired, CodeNotAcquired},
	{provider.ErrTimedOut, CodeTimedOut},
	{provider.ErrLockLost, CodeLockLost},
	{provider.ErrInvalidArgument, CodeBadRequest},
}

// mapError turns a provider error into an error reply: its code from errorCodes (redis_error
// when nothing matches), its message the provider's, verbatim (stock Medusa's for conflicts).
// The provider's error says everything, including what ended a wait; ctx is not consulted.
func mapError(_ context.Context, err error) *Error {
	if err == nil {
		return nil
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.match) {
			return newError(e.code, err.Error())
		}
	}
	return newError(CodeRedisError, err.Error())
}
