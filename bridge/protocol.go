package bridge

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/locktui/locktui/provider"
)

// ProtocolVersion is the version of docs/bridge-protocol.md this package speaks.
const ProtocolVersion = 3

// Subprotocol is the WebSocket subprotocol of version 3. Clients may offer it; a client that
// offers subprotocols without it (an older client) is refused with a message naming it.
const Subprotocol = "locktui-bridge.v3"

// unsupportedSubprotocol is the answer to an upgrade that offers subprotocols but not
// Subprotocol: as a rule, a client of an older protocol version.
var unsupportedSubprotocol = fmt.Sprintf("unsupported subprotocol: this bridge speaks %s (protocol version %d); "+
	"upgrade the client to a release that speaks it, e.g. npm install @locktui/medusa-locking-bridge@latest", Subprotocol, ProtocolVersion)

// Op names a request operation.
type Op string

// The operations of the protocol.
const (
	OpAcquire      Op = "acquire"
	OpRelease      Op = "release"
	OpReleaseAll   Op = "release_all"
	OpLease        Op = "lease"
	OpLeaseRelease Op = "lease_release"
	OpCancel       Op = "cancel"
	OpPing         Op = "ping"
	OpResume       Op = "resume"
	OpSettle       Op = "settle"
)

// Event names a message the bridge sends without an id: the welcome and the events.
type Event string

// The messages without an id of the protocol.
const (
	EventWelcome   Event = "welcome"
	EventLeaseLost Event = "lease_lost"
	EventGoingAway Event = "going_away"
)

// events lists every Event.
var events = []Event{EventWelcome, EventLeaseLost, EventGoingAway}

// Code is the machine-readable error code of an error reply or event.
type Code string

// Error codes; see the table in docs/bridge-protocol.md.
const (
	CodeNotAcquired     Code = "not_acquired"
	CodeTimedOut        Code = "timed_out"
	CodeLockLost        Code = "lock_lost"
	CodeBadRequest      Code = "bad_request"
	CodeUnknownOp       Code = "unknown_op"
	CodeDuplicateID     Code = "duplicate_id"
	CodeUnknownLease    Code = "unknown_lease"
	CodeTooManyKeys     Code = "too_many_keys"
	CodeTooManyRequests Code = "too_many_requests"
	CodeTooManyLeases   Code = "too_many_leases"
	CodeTooManyRenewals Code = "too_many_renewals"
	CodeOwnerForbidden  Code = "owner_forbidden"
	CodeKeyForbidden    Code = "key_forbidden"
	CodeRedisError      Code = "redis_error"
	CodeOutcomeUnknown  Code = "outcome_unknown"
	CodeShuttingDown    Code = "shutting_down"
)

// codes lists every Code, in the order of the table in docs/bridge-protocol.md (a test checks
// both).
var codes = []Code{
	CodeNotAcquired, CodeTimedOut, CodeLockLost, CodeBadRequest, CodeUnknownOp, CodeDuplicateID,
	CodeUnknownLease, CodeTooManyKeys, CodeTooManyRequests, CodeTooManyLeases, CodeTooManyRenewals,
	CodeOwnerForbidden, CodeKeyForbidden, CodeRedisError, CodeOutcomeUnknown, CodeShuttingDown,
}

// Type returns Medusa's error type for c ("conflict", "invalid_data", …), so that the Node
// client can rebuild a MedusaError of that type.
func (c Code) Type() string {
	switch c {
	case CodeNotAcquired, CodeTimedOut, CodeLockLost:
		return "conflict"
	case CodeUnknownLease:
		return "not_found"
	case CodeTooManyRequests, CodeTooManyLeases, CodeTooManyRenewals, CodeOwnerForbidden, CodeKeyForbidden:
		return "not_allowed"
	case CodeRedisError, CodeOutcomeUnknown, CodeShuttingDown:
		return "unexpected_state"
	default:
		return "invalid_data"
	}
}

// Error is an error reply: a code and a message. The messages of conflicts are stock Medusa's,
// verbatim.
type Error struct {
	// Code says what went wrong; Code.Type gives Medusa's error type.
	Code Code
	// Message is for people (for conflicts, stock Medusa's message).
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

func newError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// errorBody is the JSON form of an Error.
type errorBody struct {
	Type    string `json:"type"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) body() *errorBody {
	return &errorBody{Type: e.Code.Type(), Code: e.Code, Message: e.Message}
}

// Request is one decoded request frame. Fields an op does not take are zero.
type Request struct {
	// ID is the client's id, as sent (a JSON string or number); nil when it could not be read.
	ID json.RawMessage
	// Op is the operation, one of the Op constants.
	Op Op
	// Keys are the lock keys (acquire, release, lease), as sent.
	Keys []string
	// Owner is the owner (acquire, release, release_all); "" when absent or null, meaning "*".
	Owner string
	// Expire is the lock TTL, already rounded up to whole seconds. Acquire: 0 (absent) means no
	// expiry, as stock's acquire without expire (provider.StockAcquireExpire); lease: 0 means
	// the default.
	Expire time.Duration
	// AwaitQueue makes acquire wait for held keys.
	AwaitQueue bool
	// Timeout bounds the wait (acquire with AwaitQueue: 0 means none; lease: 0 means the
	// default).
	Timeout time.Duration
	// Lease is the lease id of lease_release.
	Lease string
	// Target is the id of the request a cancel is about.
	Target json.RawMessage
	// Claim identifies an acquire in the holder records of its locks (acquire, settle); "" when
	// absent.
	Claim string
	// Session is the session a resume asks about.
	Session string
	// IDs are the ids a resume asks about, as sent.
	IDs []json.RawMessage
}

// response is a reply to one request.
type response struct {
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result any             `json:"result,omitempty"`
	Error  *errorBody      `json:"error,omitempty"`
}

// Results of the ops.
type (
	// fencing is a grant's fencing tokens (docs/fencing.md): every key's, and the one that
	// stands for them all (provider.FencingTokenOf). JSON numbers, below 2^53.
	fencing struct {
		FencingToken  int64            `json:"fencing_token"`
		FencingTokens map[string]int64 `json:"fencing_tokens"`
	}
	releasedResult struct {
		Released bool `json:"released"`
	}
	countResult struct {
		Count int `json:"count"`
	}
	leaseResult struct {
		Lease   string `json:"lease"`
		Owner   string `json:"owner"`
		ValidMS int64  `json:"valid_ms"`
		// WaitedMS is how long the bridge held the request before the grant (at most the time
		// from its receipt to valid_ms's reference): the client's deadline for the lease counts
		// from its send time plus this wait (docs/bridge-protocol.md).
		WaitedMS int64 `json:"waited_ms"`
		// LostMessage is the message of the lease's loss of every key (stock's "Lost the
		// lock…", composed by the provider), for a client that finds the lease lost by itself.
		LostMessage string `json:"lost_message,omitempty"`
		fencing
		// watch starts the lease's watcher; it runs once the grant is queued, so that its
		// lease_lost follows the grant on the wire.
		watch func()
	}
	cancelledResult struct {
		Cancelled bool `json:"cancelled"`
	}
	pingResult struct {
		// Leases maps every lease of the connection still held to its validity in ms.
		Leases map[string]int64 `json:"leases"`
	}
	settleResult struct {
		Held bool `json:"held"`
		// fencing is the acquire's tokens when it held its keys (absent when not held): what
		// its own reply would have carried.
		*fencing
	}
	resumeResult struct {
		Known    bool      `json:"known"`
		Outcomes []outcome `json:"outcomes,omitempty"`
	}
)

// fencingOf is the fencing part of a grant's reply, for the tokens of its keys.
func fencingOf(tokens map[string]int64) fencing {
	return fencing{FencingToken: provider.FencingTokenOf(tokens), FencingTokens: tokens}
}

// newSettleResult is the reply to settle: held, with the tokens, when tokens is not nil.
func newSettleResult(tokens map[string]int64) settleResult {
	if tokens == nil {
		return settleResult{}
	}
	f := fencingOf(tokens)
	return settleResult{Held: true, fencing: &f}
}

// outcome is what became of one request of a resumed session.
type outcome struct {
	ID    json.RawMessage `json:"id"`
	State outcomeState    `json:"state"`
	// Reply is the request's reply without its id, when State is replied.
	Reply json.RawMessage `json:"reply,omitempty"`
}

// outcomeState is the state of a request of a resumed session.
type outcomeState string

// The states of a resumed request (see docs/bridge-protocol.md, Reconnecting).
const (
	stateReplied     outcomeState = "replied"
	stateCancelled   outcomeState = "cancelled"
	stateNotReceived outcomeState = "not_received"
	stateUnknown     outcomeState = "unknown"
)

// outcomeStates lists every outcomeState.
var outcomeStates = []outcomeState{stateReplied, stateCancelled, stateNotReceived, stateUnknown}

// Limits are the per-connection limits announced in the welcome message.
type Limits struct {
	// MaxFrameBytes is the largest frame read; a larger one closes the connection with 1009.
	MaxFrameBytes int `json:"max_frame_bytes"`
	// MaxKeys is the most keys one request may name.
	MaxKeys int `json:"max_keys"`
	// MaxInFlight is the most requests a connection may have in flight.
	MaxInFlight int `json:"max_in_flight"`
	// MaxLeases is the most leases a connection may hold.
	MaxLeases int `json:"max_leases"`
	// MinLeaseExpire is the shortest lease, in whole seconds: a lease asked for less gets it.
	MinLeaseExpire int `json:"min_lease_expire"`
	// MaxRenewalsPerSecond caps the key renewals per second of all the leases of a connection.
	MaxRenewalsPerSecond int `json:"max_renewals_per_second"`
}

// The heartbeat rule of the welcome (docs/bridge-protocol.md, Heartbeats and lease deadlines).
const (
	// pingsPerTimeout: the welcome asks clients to ping every ClientTimeout/pingsPerTimeout.
	pingsPerTimeout = 4
	// marginDivisor: the welcome's heartbeat margin is ClientTimeout/marginDivisor. A client
	// considers a connection's leases lost that long before the bridge could free them, for
	// clock-rate differences and late timers.
	marginDivisor = 4
)

// heartbeat is the heartbeat rule of the welcome message.
type heartbeat struct {
	// IntervalMS is how often the client pings.
	IntervalMS int64 `json:"interval_ms"`
	// TimeoutMS is ClientTimeout: a connection silent that long is ended.
	TimeoutMS int64 `json:"timeout_ms"`
	// MarginMS is the client's margin below TimeoutMS: it considers every lease of a connection
	// lost at (send time of its last answered request) + TimeoutMS - MarginMS. Bridges before it
	// did not send it; clients then use TimeoutMS/marginDivisor (fallbackRules).
	MarginMS int64 `json:"margin_ms"`
}

// newHeartbeat is the heartbeat rule of a bridge whose client timeout is timeout. The margin is
// rounded up, the interval down: both err on the safe side.
func newHeartbeat(timeout time.Duration) heartbeat {
	ms := timeout.Milliseconds()
	return heartbeat{
		IntervalMS: (timeout / pingsPerTimeout).Milliseconds(),
		TimeoutMS:  ms,
		MarginMS:   (ms + marginDivisor - 1) / marginDivisor,
	}
}

// welcomeLimits are the limits of the welcome message: the configured ones and the decoder's.
type welcomeLimits struct {
	Limits
	// MaxSeconds is the largest expire or timeout a request may give (MaxSeconds). Bridges
	// before it did not send it; clients then use fallbackRules.MaxSeconds.
	MaxSeconds int64 `json:"max_seconds"`
}

// welcome is the first message on every connection.
type welcome struct {
	Type        Event         `json:"type"`
	Version     int           `json:"version"`
	Namespace   string        `json:"namespace"`
	Session     string        `json:"session"`
	ResumeMS    int64         `json:"resume_ms"`
	Heartbeat   heartbeat     `json:"heartbeat"`
	Limits      welcomeLimits `json:"limits"`
	OwnerPrefix string        `json:"owner_prefix"`
	KeyPrefix   string        `json:"key_prefix"`
	// EmptyOwnerAllowed says whether an owner may be "" (EmptyOwnerAllowed). Bridges before it
	// did not send it and refused the empty owner: a client reads its absence as false.
	EmptyOwnerAllowed bool `json:"empty_owner_allowed"`
}

// newWelcome is the welcome of a connection of token with session id session, for cfg (with its
// defaults applied).
func newWelcome(cfg *Config, token Token, session string) welcome {
	return welcome{
		Type: EventWelcome, Version: ProtocolVersion, Namespace: cfg.Namespace, Session: session,
		ResumeMS:          cfg.ResumeWindow.Milliseconds(),
		Heartbeat:         newHeartbeat(cfg.ClientTimeout),
		Limits:            welcomeLimits{Limits: cfg.Limits, MaxSeconds: MaxSeconds},
		OwnerPrefix:       token.OwnerPrefix,
		KeyPrefix:         token.KeyPrefix,
		EmptyOwnerAllowed: EmptyOwnerAllowed,
	}
}

// leaseLost is the event pushed when a lease is lost.
type leaseLost struct {
	Type  Event      `json:"type"`
	Lease string     `json:"lease"`
	Keys  []string   `json:"keys"`
	Error *errorBody `json:"error"`
}

// goingAway is the event that starts the drain of a connection on shutdown.
type goingAway struct {
	Type    Event `json:"type"`
	DrainMS int64 `json:"drain_ms"`
}

// nullID is the id of replies to frames whose id could not be read.
var nullID = json.RawMessage("null")

func okResponse(id json.RawMessage, result any) response {
	return response{ID: id, OK: true, Result: result}
}

func errResponse(id json.RawMessage, err *Error) response {
	if id == nil {
		id = nullID
	}
	return response{ID: id, Error: err.body()}
}
