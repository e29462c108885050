package chaos_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/e2e/chaos"
)

// writeLog writes content to a file in the test's directory and returns its path.
func writeLog(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestReadLogsMergesFilesInOrder(t *testing.T) {
	a := writeLog(t, "go-1.jsonl", `{"t":10,"holder":"go-1","key":"k","ev":"enter"}
{"t":20,"holder":"go-1","key":"k","ev":"exit","pid":4242}
`)
	b := writeLog(t, "sched.jsonl", `{"t": 9007199254740993, "holder": "node-2#7", "ev": "killed"}`+"\n")
	events, err := chaos.ReadLogs(a, b)
	require.NoError(t, err)
	require.Equal(t, []chaos.Event{
		{T: 10, Holder: "go-1", Key: "k", Ev: chaos.Enter, File: a, Line: 1},
		{T: 20, Holder: "go-1", Key: "k", Ev: chaos.Exit, File: a, Line: 2},
		{T: 9007199254740993, Holder: "node-2#7", Ev: chaos.Killed, File: b, Line: 1}, // beyond 2^53, exact
	}, events)
	require.Equal(t, a+":2", events[1].Where())
	require.Empty(t, chaos.Event{}.Where())
}

func TestReadLogsLastLine(t *testing.T) {
	const good = `{"t":10,"holder":"go-1","key":"k","ev":"enter"}`
	for _, tt := range []struct {
		name, content string
		events        int
	}{
		{"empty file", "", 0},
		{"truncated by a SIGKILL", good + "\n" + `{"t":20,"holder":"go-1","ke`, 1},
		{"truncated inside the number", good + "\n" + `{"t":2`, 1},
		{"truncated to one byte", good + "\n{", 1},
		{"complete but for its newline", good + "\n" + good, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events, err := chaos.ReadLogs(writeLog(t, "log.jsonl", tt.content))
			require.NoError(t, err)
			require.Len(t, events, tt.events)
		})
	}
}

func TestReadLogsMalformedLine(t *testing.T) {
	const good = `{"t":10,"holder":"go-1","key":"k","ev":"enter"}` + "\n"
	for _, tt := range []struct {
		name, line, want string
	}{
		{"not JSON", `t=10 holder=go-1`, "malformed event"},
		{"a truncated line followed by others", `{"t":20,"holder":"go-1","ke`, "malformed event"},
		{"blank", ``, "malformed event"},
		{"an array", `[10,"go-1","k","enter"]`, "malformed event"},
		{"two objects", `{"t":1,"holder":"a","key":"k","ev":"enter"}{}`, "malformed event"},
		{"t as a string", `{"t":"10","holder":"go-1","key":"k","ev":"enter"}`, "malformed event"},
		{"t as a fraction", `{"t":10.5,"holder":"go-1","key":"k","ev":"enter"}`, "malformed event"},
		{"t in exponent form", `{"t":1e10,"holder":"go-1","key":"k","ev":"enter"}`, "malformed event"},
		{"no t", `{"holder":"go-1","key":"k","ev":"enter"}`, "t, holder and ev are required"},
		{"no holder", `{"t":10,"key":"k","ev":"enter"}`, "t, holder and ev are required"},
		{"no ev", `{"t":10,"holder":"go-1","key":"k"}`, "t, holder and ev are required"},
		{"null", `null`, "t, holder and ev are required"},
		{"empty holder", `{"t":10,"holder":"","key":"k","ev":"enter"}`, "no holder"},
		{"negative t", `{"t":-1,"holder":"go-1","key":"k","ev":"enter"}`, "negative t"},
		{"unknown ev", `{"t":10,"holder":"go-1","key":"k","ev":"entered"}`, `unknown ev "entered"`},
		{"enter without key", `{"t":10,"holder":"go-1","ev":"enter"}`, `"enter" without a key`},
		{"lost with an empty key", `{"t":10,"holder":"go-1","key":"","ev":"lost"}`, `"lost" without a key`},
		{"killed with a key", `{"t":10,"holder":"go-1","key":"k","ev":"killed"}`, `"killed" takes no key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The bad line is line 2, and it ends in a newline: not a truncated last line.
			path := writeLog(t, "log.jsonl", good+tt.line+"\n"+good)
			events, err := chaos.ReadLogs(path)
			require.ErrorContains(t, err, "chaos: "+path+":2: ")
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, events)
		})
	}
}

func TestReadLogsMissingFile(t *testing.T) {
	_, err := chaos.ReadLogs(filepath.Join(t.TempDir(), "absent.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A run read from its files: a SIGKILLed Node holder, whose last line is cut, overlapped by a
// Go holder that entered before the kill was logged.
func TestReadLogsThenCheck(t *testing.T) {
	node := writeLog(t, "node-1.jsonl", `{"t":100,"holder":"node-1","key":"cart","ev":"enter"}
{"t":150,"holder":"node-1","key":"cart","ev":"exit"}
{"t":160,"holder":"node-1","key":"cart","ev":"enter"}
{"t":170,"holder":"node-1","key":"ca`)
	goLog := writeLog(t, "go-1.jsonl", `{"t":165,"holder":"go-1","key":"cart","ev":"enter"}
{"t":300,"holder":"go-1","key":"cart","ev":"exit"}
`)
	sched := writeLog(t, "sched.jsonl", `{"t":200,"holder":"node-1","ev":"killed"}`+"\n")
	events, err := chaos.ReadLogs(sched, goLog, node)
	require.NoError(t, err)
	r := chaos.Check(events)
	require.Len(t, r.Violations, 1, "%v", r)
	v := r.Violations[0]
	require.Equal(t, chaos.Violation{
		Key: "cart", Holder: "go-1", At: 165, Believer: "node-1", Since: 160,
		Where: goLog + ":1", BelieverWhere: node + ":3",
	}, v)
	require.Equal(t, 1, r.Killed)
	require.Zero(t, r.Open)
}
