package bridge

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

//go:generate go run ./internal/protocoljson

// ProtocolJSONFile is the file, relative to the module root, that holds ProtocolJSON for the Node
// client (compat/medusa-locking-bridge reads it, and npm packs it with lib/). `go generate
// ./bridge` writes it; a test of this package fails when it differs from ProtocolJSON.
const ProtocolJSONFile = "compat/medusa-locking-bridge/lib/protocol.json"

// fallbackRules are what a client assumes of a welcome that lacks a value: the rules that
// version 2 bridges before the value was announced applied without saying so. A bridge announces its own
// values (heartbeat.margin_ms, limits.max_seconds, limits.max_in_flight); these are for older
// ones, so they must stay what those bridges did (a test pins them): a bridge that needs other
// values announces them.
type fallbackRules struct {
	// HeartbeatMarginDivisor: without heartbeat.margin_ms, the margin is timeout_ms divided by it.
	HeartbeatMarginDivisor int `json:"heartbeat_margin_divisor"`
	// MaxSeconds: without limits.max_seconds, the largest expire or timeout.
	MaxSeconds int64 `json:"max_seconds"`
	// MaxInFlight: without limits.max_in_flight, the most requests in flight.
	MaxInFlight int `json:"max_in_flight"`
}

// fallbacks are this protocol's fallbackRules.
var fallbacks = fallbackRules{HeartbeatMarginDivisor: marginDivisor, MaxSeconds: MaxSeconds, MaxInFlight: DefaultMaxInFlight}

// protocolFile is the JSON form of ProtocolJSON. Every name map goes from the name in capitals
// (what a client writes, e.g. Ops.LEASE_RELEASE) to the name on the wire ("lease_release").
type protocolFile struct {
	Generated    string            `json:"generated"`
	Version      int               `json:"version"`
	Subprotocol  string            `json:"subprotocol"`
	ClientHeader string            `json:"client_header"`
	Ops          map[string]string `json:"ops"`
	Events       map[string]string `json:"events"`
	Codes        map[string]string `json:"codes"`
	ResumeStates map[string]string `json:"resume_states"`
	Fallbacks    fallbackRules     `json:"fallbacks"`
}

// ProtocolJSON returns the vocabulary of the protocol (docs/bridge-protocol.md) for clients in
// other languages, as JSON: what a client must know before any welcome or that names things on
// the wire: the version, the WebSocket subprotocol, the ClientHeader, the op names, the names of
// the messages without an id (welcome and events), the error codes and the states of a resumed
// request; and the fallbacks for a welcome that lacks a value. What a bridge decides at run time
// (limits, heartbeat, margin, max_seconds, whether the empty owner is allowed) is in its welcome
// instead.
func ProtocolJSON() []byte {
	f := protocolFile{
		Generated: "by `go generate ./bridge` from the Go constants of package bridge (bridge/protocol.go, bridge/vocabulary.go): " +
			"do not edit; a Go test fails when this file differs from them. See docs/bridge-protocol.md.",
		Version:      ProtocolVersion,
		Subprotocol:  Subprotocol,
		ClientHeader: ClientHeader,
		Ops:          names(slices.Collect(maps.Keys(opFields))),
		Events:       names(events),
		Codes:        names(codes),
		ResumeStates: names(outcomeStates),
		Fallbacks:    fallbacks,
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic(err) // strings, ints and maps of strings always encode
	}
	return append(data, '\n')
}

// names maps each value's name in capitals to the value.
func names[T ~string](values []T) map[string]string {
	m := make(map[string]string, len(values))
	for _, v := range values {
		m[strings.ToUpper(string(v))] = string(v)
	}
	return m
}
