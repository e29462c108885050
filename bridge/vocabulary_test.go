package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// moduleRoot is the module root, seen from this package's directory (where go test runs).
const moduleRoot = ".."

// TestProtocolJSONFileIsCurrent is the contract between the bridge and the Node client: the
// vocabulary file the Node package ships (and reads instead of spelling any protocol name itself)
// is exactly what the bridge's constants give.
func TestProtocolJSONFileIsCurrent(t *testing.T) {
	onDisk, err := os.ReadFile(filepath.Join(moduleRoot, filepath.FromSlash(ProtocolJSONFile)))
	require.NoError(t, err, "the Node client's copy of the protocol: run `go generate ./bridge`")
	require.Equal(t, string(ProtocolJSON()), string(onDisk),
		"%s differs from the bridge's constants: run `go generate ./bridge` and commit the file", ProtocolJSONFile)
}

// TestVocabularyListsEveryConstant: every constant of a vocabulary type declared in the package
// (an Op, a Code, an Event, an outcomeState) is in the lists ProtocolJSON reads, so that a new
// one cannot be left out of the Node client's copy.
func TestVocabularyListsEveryConstant(t *testing.T) {
	declared := declaredConstants(t, "Op", "Code", "Event", "outcomeState")
	assert.ElementsMatch(t, declared["Op"], strs(slices.Collect(maps.Keys(opFields))), "ops (decode.go's opFields)")
	assert.ElementsMatch(t, declared["Code"], strs(codes), "codes")
	assert.ElementsMatch(t, declared["Event"], strs(events), "events")
	assert.ElementsMatch(t, declared["outcomeState"], strs(outcomeStates), "outcomeStates")

	var f protocolFile
	require.NoError(t, json.Unmarshal(ProtocolJSON(), &f))
	for kind, m := range map[string]map[string]string{"ops": f.Ops, "codes": f.Codes, "events": f.Events, "resume_states": f.ResumeStates} {
		for name, value := range m {
			assert.Regexp(t, `^[a-z]+(_[a-z]+)*$`, value, "%s: a wire name in lower snake case", kind)
			assert.Equal(t, strings.ToUpper(value), name, kind)
		}
	}
	for _, op := range f.Ops {
		_, err := DecodeRequest([]byte(`{"id":1,"op":` + strconv.Quote(op) + `}`))
		var e *Error
		if err != nil {
			require.ErrorAs(t, err, &e)
			assert.NotEqual(t, CodeUnknownOp, e.Code, "op %q is known to the decoder", op)
		}
	}
}

// TestFallbacksAreHistory pins the fallbacks: they are what bridges before the welcome announced
// heartbeat.margin_ms, limits.max_seconds and limits.max_in_flight applied, so a client must keep
// assuming them of such a bridge. Change the bridge's own rules by announcing them, never here.
func TestFallbacksAreHistory(t *testing.T) {
	assert.Equal(t, fallbackRules{HeartbeatMarginDivisor: 4, MaxSeconds: 1_000_000_000, MaxInFlight: 256}, fallbacks)
}

// TestWelcomeAnnouncesRunTimeRules: the welcome carries the rules a client must follow, as the
// bridge applies them, and a client following them keeps its leases certain.
func TestWelcomeAnnouncesRunTimeRules(t *testing.T) {
	cfg := Config{}.withDefaults()
	var w map[string]any
	require.NoError(t, json.Unmarshal(mustJSON(t, newWelcome(&cfg, Token{}, "s")), &w))
	assert.Equal(t, map[string]any{"interval_ms": 1000.0, "timeout_ms": 4000.0, "margin_ms": 1000.0}, w["heartbeat"])
	assert.Equal(t, float64(MaxSeconds), w["limits"].(map[string]any)["max_seconds"])
	assert.Equal(t, false, w["empty_owner_allowed"])

	for _, timeout := range []time.Duration{MinClientTimeout, 401 * time.Millisecond, 999 * time.Millisecond, DefaultClientTimeout, 4001 * time.Millisecond, time.Minute} {
		hb := newHeartbeat(timeout)
		assert.Equal(t, timeout.Milliseconds(), hb.TimeoutMS)
		assert.Positive(t, hb.MarginMS, "%v", timeout)
		assert.Less(t, hb.MarginMS, hb.TimeoutMS, "%v", timeout)
		assert.GreaterOrEqual(t, marginDivisor*hb.MarginMS, hb.TimeoutMS, "%v: the margin is never below timeout/%d", timeout, marginDivisor)
		// The client refuses an interval above (timeout - margin)/2: the bridge's own passes.
		assert.LessOrEqual(t, 2*hb.IntervalMS, hb.TimeoutMS-hb.MarginMS, "%v: the announced interval leaves room for two pings", timeout)
	}

	// The decoder applies what the welcome announces.
	_, err := DecodeRequest([]byte(`{"id":1,"op":"acquire","keys":["k"],"expire":` + strconv.FormatInt(int64(MaxSeconds), 10) + `}`))
	assert.NoError(t, err, "expire max_seconds")
	_, err = DecodeRequest([]byte(`{"id":1,"op":"acquire","keys":["k"],"expire":` + strconv.FormatInt(int64(MaxSeconds)+1, 10) + `}`))
	assert.Error(t, err, "expire max_seconds + 1")
	_, err = DecodeRequest([]byte(`{"id":1,"op":"acquire","keys":["k"],"owner":""}`))
	assert.Equal(t, EmptyOwnerAllowed, err == nil, "the empty owner, announced as empty_owner_allowed %v", EmptyOwnerAllowed)
}

// TestDocsDescribeTheProtocol: docs/bridge-protocol.md lists exactly the ops and error codes (with
// their types, in order), names the subprotocol, the client header and the events, and its
// welcome example is what a bridge with the default configuration sends.
func TestDocsDescribeTheProtocol(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "bridge-protocol.md"))
	require.NoError(t, err)
	text := string(doc)

	ops := tableRows(t, text, "| op | fields | result |")
	assert.ElementsMatch(t, strs(slices.Collect(maps.Keys(opFields))), firstColumn(ops), "the op table")
	var docCodes, docTypes, wantTypes []string
	for _, row := range tableRows(t, text, "| code | type | when |") {
		docCodes, docTypes = append(docCodes, unticked(row[0])), append(docTypes, unticked(row[1]))
	}
	for _, c := range codes {
		wantTypes = append(wantTypes, c.Type())
	}
	assert.Equal(t, strs(codes), docCodes, "the error table's codes, in order")
	assert.Equal(t, wantTypes, docTypes, "the error table's types")

	assert.Contains(t, text, "subprotocol `"+Subprotocol+"`")
	assert.Contains(t, text, "`"+ClientHeader+": host=")
	assert.Contains(t, text, "# locktui bridge protocol, version "+strconv.Itoa(ProtocolVersion))
	for _, e := range []Event{EventLeaseLost, EventGoingAway} {
		assert.Contains(t, text, `{"type": "`+string(e)+`"`, "an example of the event")
	}

	example := regexp.MustCompile("(?s)```json\n(\\{\"type\":\"" + string(EventWelcome) + "\".*?)```").FindStringSubmatch(text)
	require.NotNil(t, example, "the welcome example")
	var documented, sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(example[1]), &documented), "the welcome example is JSON")
	cfg := Config{}.withDefaults()
	require.NoError(t, json.Unmarshal(mustJSON(t, newWelcome(&cfg, Token{}, documented["session"].(string))), &sent))
	assert.Equal(t, sent, documented, "the welcome example is the default configuration's welcome")
}

// declaredConstants reads the package's non-test files and returns, for each of the named types,
// the string values of the constants declared with it.
func declaredConstants(t *testing.T, types ...string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				typ, ok := vs.Type.(*ast.Ident)
				if !ok || !slices.Contains(types, typ.Name) {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					require.True(t, ok && lit.Kind == token.STRING, "%s: a %s constant is a string literal", fset.Position(v.Pos()), typ.Name)
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					out[typ.Name] = append(out[typ.Name], s)
				}
			}
		}
	}
	return out
}

// tableRows returns the cells of the rows of the Markdown table whose header line is header.
func tableRows(t *testing.T, text, header string) [][]string {
	t.Helper()
	i := strings.Index(text, "\n"+header+"\n")
	require.GreaterOrEqual(t, i, 0, "a table headed %q", header)
	sc := bufio.NewScanner(strings.NewReader(text[i+len(header)+2:]))
	sc.Buffer(nil, 1<<20)
	var rows [][]string
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	require.NotEmpty(t, rows, "the rows of the table headed %q", header)
	return rows
}

func firstColumn(rows [][]string) []string {
	var out []string
	for _, row := range rows {
		out = append(out, unticked(row[0]))
	}
	return out
}

// unticked is a table cell's `code` without its backticks.
func unticked(cell string) string { return strings.Trim(cell, "`") }

func strs[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.NewEncoder(&b).Encode(v))
	return b.Bytes()
}
