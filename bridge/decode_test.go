package bridge_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
)

var decodeOK = []struct {
	frame string
	want  bridge.Request
}{
	{`{"id":1,"op":"acquire","keys":["b","a"],"owner":"o","expire":1.2,"await_queue":true,"timeout":0.5}`,
		bridge.Request{ID: json.RawMessage(`1`), Op: bridge.OpAcquire, Keys: []string{"b", "a"}, Owner: "o",
			Expire: 2 * time.Second, AwaitQueue: true, Timeout: 500 * time.Millisecond}},
	{`{"id":"x","op":"acquire","keys":["a"],"owner":null,"expire":null,"await_queue":null,"timeout":null}`,
		bridge.Request{ID: json.RawMessage(`"x"`), Op: bridge.OpAcquire, Keys: []string{"a"}}},
	{`{"id":2,"op":"acquire","keys":["a"],"expire":0,"await_queue":true,"timeout":1e-12}`,
		bridge.Request{ID: json.RawMessage(`2`), Op: bridge.OpAcquire, Keys: []string{"a"}, AwaitQueue: true, Timeout: 1}},
	{`{"id":3,"op":"release","keys":["a"]}`, bridge.Request{ID: json.RawMessage(`3`), Op: bridge.OpRelease, Keys: []string{"a"}}},
	{`{"id":4,"op":"release_all"}`, bridge.Request{ID: json.RawMessage(`4`), Op: bridge.OpReleaseAll}},
	{`{"id":5,"op":"lease","keys":["a"],"timeout":2,"expire":0.1}`,
		bridge.Request{ID: json.RawMessage(`5`), Op: bridge.OpLease, Keys: []string{"a"}, Timeout: 2 * time.Second, Expire: time.Second}},
	{`{"id":6,"op":"lease_release","lease":"L1"}`, bridge.Request{ID: json.RawMessage(`6`), Op: bridge.OpLeaseRelease, Lease: "L1"}},
	{`{"id":-1.5e3,"op":"cancel","target":"q"}`,
		bridge.Request{ID: json.RawMessage(`-1.5e3`), Op: bridge.OpCancel, Target: json.RawMessage(`"q"`)}},
	{` {"op":"ping","id":"\u00e9<"} `, bridge.Request{ID: json.RawMessage(`"é<"`), Op: bridge.OpPing}},
	{"{\"op\":\"ping\",\"id\":\"\xff\"}", bridge.Request{ID: json.RawMessage("\"\ufffd\""), Op: bridge.OpPing}},
	// Ids without escapes are kept as sent; U+2028 and U+2029 are escaped, as encoding/json does.
	{`{"op":"ping","id":"plain <&> id"}`, bridge.Request{ID: json.RawMessage(`"plain <&> id"`), Op: bridge.OpPing}},
	{"{\"op\":\"ping\",\"id\":\"a\u2028b\"}", bridge.Request{ID: json.RawMessage(`"a\u2028b"`), Op: bridge.OpPing}},
	{`{"id":7,"op":"release","keys":["caf\u00e9","tab\tkey"],"owner":"o\"1"}`,
		bridge.Request{ID: json.RawMessage(`7`), Op: bridge.OpRelease, Keys: []string{"café", "tab\tkey"}, Owner: `o"1`}},
}

func TestDecodeRequestAccepts(t *testing.T) {
	for _, tc := range decodeOK {
		got, err := bridge.DecodeRequest([]byte(tc.frame))
		require.NoError(t, err, "DecodeRequest(%s)", tc.frame)
		require.Equal(t, tc.want, got, "DecodeRequest(%s)", tc.frame)
	}
}

var decodeBad = []struct {
	frame, code, message string
}{
	{``, "bad_request", "invalid JSON: unexpected end of JSON input"},
	{`{"id":1,"op":"ping"`, "bad_request", "invalid JSON: unexpected end of JSON input"},
	{`null`, "bad_request", "a request must be a JSON object"},
	{`"ping"`, "bad_request", "a request must be a JSON object"},
	{`{"op":"ping"}`, "bad_request", `"id" is required: a string or a number`},
	{`{"id":null,"op":"ping"}`, "bad_request", `"id" must be a string or a number`},
	{`{"id":true,"op":"ping"}`, "bad_request", `"id" must be a string or a number`},
	{`{"id":"` + strings.Repeat("x", 130) + `","op":"ping"}`, "bad_request", `"id" is longer than 128 bytes`},
	{`{"id":1}`, "bad_request", `"op" is required`},
	{`{"id":1,"op":5}`, "bad_request", `"op" must be a string`},
	{`{"id":1,"op":"fly"}`, "unknown_op", `unknown op "fly"`},
	{`{"id":1,"op":"` + strings.Repeat("y", 70) + `"}`, "unknown_op", `unknown op "` + strings.Repeat("y", 64) + `"…`},
	{`{"id":1,"op":"ping","keys":["a"]}`, "bad_request", `unknown field "keys" for op "ping"`},
	{`{"id":1,"op":"release","keys":["a"],"expire":1}`, "bad_request", `unknown field "expire" for op "release"`},
	{`{"id":1,"op":"acquire"}`, "bad_request", `"keys" is required for op "acquire"`},
	{`{"id":1,"op":"acquire","keys":null}`, "bad_request", `"keys" is required for op "acquire"`},
	{`{"id":1,"op":"acquire","keys":[]}`, "bad_request", `"keys" must hold at least one key`},
	{`{"id":1,"op":"acquire","keys":"a"}`, "bad_request", `"keys" must be an array of strings`},
	{`{"id":1,"op":"acquire","keys":["a",null]}`, "bad_request", `"keys" must be an array of strings`},
	{`{"id":1,"op":"acquire","keys":["a"],"owner":5}`, "bad_request", `"owner" must be a string or null`},
	{`{"id":1,"op":"acquire","keys":["a"],"owner":""}`, "bad_request", `"owner" must not be empty: send null for the anonymous owner "*"`},
	{`{"id":1,"op":"acquire","keys":["a"],"expire":"5"}`, "bad_request", `"expire" must be a number of seconds`},
	{`{"id":1,"op":"acquire","keys":["a"],"expire":-1}`, "bad_request", `"expire" must be between 0 and 1000000000 seconds`},
	{`{"id":1,"op":"acquire","keys":["a"],"expire":1e10}`, "bad_request", `"expire" must be between 0 and 1000000000 seconds`},
	{`{"id":1,"op":"acquire","keys":["a"],"expire":1e400}`, "bad_request", `"expire" must be between 0 and 1000000000 seconds`},
	{`{"id":1,"op":"acquire","keys":["a"],"timeout":1}`, "bad_request", `"timeout" is only allowed with "await_queue": true`},
	{`{"id":1,"op":"acquire","keys":["a"],"await_queue":true,"timeout":0}`, "bad_request", `"timeout" must be more than 0 seconds`},
	{`{"id":1,"op":"acquire","keys":["a"],"await_queue":"yes"}`, "bad_request", `"await_queue" must be a boolean`},
	{`{"id":1,"op":"lease","keys":["a"],"expire":0}`, "bad_request", `"expire" must be more than 0 seconds`},
	{`{"id":1,"op":"lease_release","lease":""}`, "bad_request", `"lease" must be a non-empty string`},
	{`{"id":1,"op":"lease_release","lease":5}`, "bad_request", `"lease" must be a non-empty string`},
	{`{"id":1,"op":"cancel"}`, "bad_request", `"target" is required for op "cancel"`},
	{`{"id":1,"op":"cancel","target":{}}`, "bad_request", `"target" must be a string or a number`},
}

func TestDecodeRequestRejects(t *testing.T) {
	for _, tc := range decodeBad {
		_, err := bridge.DecodeRequest([]byte(tc.frame))
		var perr *bridge.Error
		require.True(t, errors.As(err, &perr), "DecodeRequest(%s) = %v, want a *bridge.Error", tc.frame, err)
		require.Equal(t, bridge.Code(tc.code), perr.Code, "DecodeRequest(%s): %s", tc.frame, perr.Message)
		require.Equal(t, tc.message, perr.Message, "DecodeRequest(%s)", tc.frame)
	}
	// The id is kept when only a later field is wrong, so that the reply can name the request.
	req, err := bridge.DecodeRequest([]byte(`{"id":"r1","op":"acquire","keys":5}`))
	require.Error(t, err)
	require.Equal(t, `"r1"`, string(req.ID))
}

// FuzzDecodeRequest checks that no frame panics the decoder, that every failure is a protocol
// error, and that every accepted request is well-formed and survives a re-encoding.
func FuzzDecodeRequest(f *testing.F) {
	for _, tc := range decodeOK {
		f.Add([]byte(tc.frame))
	}
	for _, tc := range decodeBad {
		f.Add([]byte(tc.frame))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := bridge.DecodeRequest(frame)
		if req.ID != nil {
			require.True(t, json.Valid(req.ID), "id %q", req.ID)
			require.LessOrEqual(t, len(req.ID), bridge.MaxIDBytes)
		}
		if err != nil {
			var perr *bridge.Error
			require.True(t, errors.As(err, &perr), "%T: %v", err, err)
			require.Contains(t, []bridge.Code{bridge.CodeBadRequest, bridge.CodeUnknownOp}, perr.Code)
			return
		}
		checkWellFormed(t, req)
		again, err := bridge.DecodeRequest(reencode(req))
		require.NoError(t, err, "re-encoded %s", reencode(req))
		require.InDelta(t, float64(req.Timeout), float64(again.Timeout), 1, "timeout")
		again.Timeout = req.Timeout
		require.Equal(t, req, again)
	})
}

func checkWellFormed(t *testing.T, req bridge.Request) {
	require.NotNil(t, req.ID)
	switch req.Op {
	case bridge.OpAcquire, bridge.OpRelease, bridge.OpLease:
		require.NotEmpty(t, req.Keys)
	case bridge.OpLeaseRelease:
		require.NotEmpty(t, req.Lease)
	case bridge.OpCancel:
		require.True(t, json.Valid(req.Target))
	case bridge.OpReleaseAll, bridge.OpPing:
	default:
		t.Fatalf("unknown op %q accepted", req.Op)
	}
	maxDuration := time.Duration(bridge.MaxSeconds) * time.Second
	require.True(t, req.Expire >= 0 && req.Expire <= maxDuration && req.Expire%time.Second == 0, "expire %v", req.Expire)
	require.True(t, req.Timeout >= 0 && req.Timeout <= maxDuration, "timeout %v", req.Timeout)
	if req.Op == bridge.OpAcquire && req.Timeout > 0 {
		require.True(t, req.AwaitQueue)
	}
}

// reencode writes req back as a frame.
func reencode(req bridge.Request) []byte {
	m := map[string]any{"id": req.ID, "op": req.Op}
	if req.Keys != nil {
		m["keys"] = req.Keys
	}
	if req.Owner != "" {
		m["owner"] = req.Owner
	}
	if req.Expire > 0 {
		m["expire"] = req.Expire.Seconds()
	}
	if req.AwaitQueue {
		m["await_queue"] = true
	}
	if req.Timeout > 0 {
		m["timeout"] = math.Max(req.Timeout.Seconds(), 1e-9)
	}
	if req.Lease != "" {
		m["lease"] = req.Lease
	}
	if req.Target != nil {
		m["target"] = req.Target
	}
	data, _ := json.Marshal(m)
	return data
}

// BenchmarkDecodeRequest measures the decoding of the frames of one bridge execute (a lease and
// its lease_release), as the Node client sends them. Run it with
// go test -run '^$' -bench BenchmarkDecodeRequest -benchmem ./bridge/
func BenchmarkDecodeRequest(b *testing.B) {
	frames := [][]byte{
		[]byte(`{"id":17,"op":"lease","keys":["cart:8c6f0a5e"],"timeout":5,"expire":60}`),
		[]byte(`{"id":18,"op":"lease_release","lease":"L42"}`),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := bridge.DecodeRequest(frames[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}
