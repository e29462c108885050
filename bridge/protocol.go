package bridge

import (
	"encoding/json"
	"time"
)

// ProtocolVersion is the version of docs/bridge-protocol.md this package speaks.
const ProtocolVersion = 1

// Subprotocol is the WebSocket subprotocol of version 1. Clients may offer it; a client that
// offers subprotocols without it is refused.
const Subprotocol = "locktui-bridge.v1"

// Op names a request operation.
type Op string

// The operations of protocol version 1.
const (
	OpAcquire      Op = "acquire"
	OpRelease      Op = "release"
	OpReleaseAll   Op = "release_all"
	OpLease        Op = "lease"
	OpLeaseRelease Op = "lease_release"
	OpCancel       Op = "cancel"
	OpPing         Op = "ping"
)

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
	CodeOwnerForbidden  Code = "owner_forbidden"
	CodeRedisError      Code = "redis_error"
	CodeShuttingDown    Code = "shutting_down"
)

// Type returns Medusa's error type for c ("conflict", "invalid_data", …), so that the Node
// client can rebuild a MedusaError of that type.
func (c Code) Type() string {
	switch c {
	case CodeNotAcquired, CodeTimedOut, CodeLockLost:
		return "conflict"
	case CodeUnknownLease:
		return "not_found"
	case CodeTooManyRequests, CodeTooManyLeases, CodeOwnerForbidden:
		return "not_allowed"
	case CodeRedisError, CodeShuttingDown:
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
	// Expire is the lock TTL (acquire: 0 means no expiry; lease: 0 means the default), already
	// rounded up to whole seconds.
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
	emptyResult    struct{}
	releasedResult struct {
		Released bool `json:"released"`
	}
	countResult struct {
		Count int `json:"count"`
	}
	leaseResult struct {
		Lease string `json:"lease"`
		Owner string `json:"owner"`
	}
	cancelledResult struct {
		Cancelled bool `json:"cancelled"`
	}
)

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
}

// welcome is the first message on every connection.
type welcome struct {
	Type        string `json:"type"`
	Version     int    `json:"version"`
	Namespace   string `json:"namespace"`
	Limits      Limits `json:"limits"`
	OwnerPrefix string `json:"owner_prefix"`
}

// leaseLost is the event pushed when a renewal finds a lease lost.
type leaseLost struct {
	Type  string     `json:"type"`
	Lease string     `json:"lease"`
	Keys  []string   `json:"keys"`
	Error *errorBody `json:"error"`
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
