package chaos_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/e2e/chaos"
)

// ev builds an event; key is ignored for killed.
func ev(t int64, holder string, kind chaos.EventKind, key string) chaos.Event {
	if kind == chaos.Killed {
		key = ""
	}
	return chaos.Event{T: t, Holder: holder, Ev: kind, Key: key}
}

func enter(t int64, holder, key string) chaos.Event { return ev(t, holder, chaos.Enter, key) }
func exit(t int64, holder, key string) chaos.Event  { return ev(t, holder, chaos.Exit, key) }
func lost(t int64, holder, key string) chaos.Event  { return ev(t, holder, chaos.Lost, key) }
func killed(t int64, holder string) chaos.Event     { return ev(t, holder, chaos.Killed, "") }

// brief writes a violation as "key: holder@at over believer@since".
func brief(v chaos.Violation) string {
	return fmt.Sprintf("%s: %s@%d over %s@%d", v.Key, v.Holder, v.At, v.Believer, v.Since)
}

var checkTests = []struct {
	name       string
	events     []chaos.Event
	violations []string // brief
	errors     []string // substrings of the reasons, in order
	open       int
}{{
	name:   "one holder after another",
	events: []chaos.Event{enter(10, "go-1", "k"), exit(20, "go-1", "k"), enter(30, "node-1", "k"), exit(40, "node-1", "k")},
}, {
	name:       "overlap",
	events:     []chaos.Event{enter(10, "go-1", "k"), enter(20, "node-1", "k"), exit(30, "go-1", "k"), exit(40, "node-1", "k")},
	violations: []string{"k: node-1@20 over go-1@10"},
}, {
	name:       "an enter one nanosecond before the other's exit",
	events:     []chaos.Event{enter(10, "go-1", "k"), exit(20, "go-1", "k"), enter(19, "node-1", "k"), exit(30, "node-1", "k")},
	violations: []string{"k: node-1@19 over go-1@10"},
}, {
	name:   "back to back on the same nanosecond, the enter given first",
	events: []chaos.Event{enter(20, "node-1", "k"), enter(10, "go-1", "k"), exit(20, "go-1", "k"), exit(30, "node-1", "k")},
}, {
	name:   "lost ends the belief",
	events: []chaos.Event{enter(10, "go-1", "k"), lost(15, "go-1", "k"), enter(20, "node-1", "k")},
	open:   1,
}, {
	name:   "lost at the same nanosecond as the next enter",
	events: []chaos.Event{enter(10, "go-1", "k"), enter(15, "node-1", "k"), lost(15, "go-1", "k")},
	open:   1,
}, {
	name: "lost after exit changes nothing",
	events: []chaos.Event{
		enter(10, "go-1", "k"), exit(15, "go-1", "k"), enter(20, "node-1", "k"), lost(25, "go-1", "k"),
		exit(30, "node-1", "k"),
	},
}, {
	name:   "exit without an enter is ignored",
	events: []chaos.Event{exit(5, "go-1", "k"), enter(10, "node-1", "k"), exit(20, "node-1", "k")},
}, {
	name: "killed ends every belief of its holder",
	events: []chaos.Event{
		enter(10, "node-1", "a"), enter(11, "node-1", "b"), killed(20, "node-1"),
		enter(25, "go-1", "a"), enter(25, "go-2", "b"), exit(30, "go-1", "a"), exit(30, "go-2", "b"),
	},
}, {
	name:   "killed at the same nanosecond as the next enter",
	events: []chaos.Event{enter(20, "go-1", "k"), enter(10, "node-1", "k"), killed(20, "node-1"), exit(30, "go-1", "k")},
}, {
	name:       "killed is late: an enter before it is a violation",
	events:     []chaos.Event{enter(10, "node-1", "k"), enter(15, "go-1", "k"), killed(20, "node-1"), exit(30, "go-1", "k")},
	violations: []string{"k: go-1@15 over node-1@10"},
}, {
	name:       "never ended, never killed: the belief blocks everyone after it",
	events:     []chaos.Event{enter(10, "node-1", "k"), enter(1000, "go-1", "k")},
	violations: []string{"k: go-1@1000 over node-1@10"},
	open:       2,
}, {
	name:   "an open belief at the end is counted",
	events: []chaos.Event{enter(10, "go-1", "k"), exit(20, "go-1", "k"), enter(30, "node-1", "k")},
	open:   1,
}, {
	name: "keys are independent",
	events: []chaos.Event{
		enter(10, "go-1", "a"), enter(15, "node-1", "b"), enter(16, "run-1", "a"), exit(20, "go-1", "a"),
		exit(20, "node-1", "b"), exit(21, "run-1", "a"),
	},
	violations: []string{"a: run-1@16 over go-1@10"},
}, {
	name:       "two enters on the same nanosecond: the second given is the violation",
	events:     []chaos.Event{enter(10, "stock-1", "k"), enter(10, "go-1", "k"), exit(20, "stock-1", "k"), exit(20, "go-1", "k")},
	violations: []string{"k: go-1@10 over stock-1@10"},
}, {
	name:   "enter and exit on one tick hold nothing against an enter on that tick",
	events: []chaos.Event{enter(10, "go-1", "k"), exit(10, "go-1", "k"), enter(10, "node-1", "k"), exit(20, "node-1", "k")},
}, {
	name: "three holders at once",
	events: []chaos.Event{
		enter(10, "go-1", "k"), enter(20, "node-1", "k"), enter(25, "poller-1", "k"), exit(30, "node-1", "k"),
		exit(50, "go-1", "k"), exit(60, "poller-1", "k"),
	},
	violations: []string{"k: node-1@20 over go-1@10", "k: poller-1@25 over go-1@10", "k: poller-1@25 over node-1@20"},
}, {
	name:       "ids with a suffix are distinct holders",
	events:     []chaos.Event{enter(10, "node-2#1", "k"), killed(12, "node-2#1"), enter(15, "node-2#2", "k"), enter(16, "node-2#3", "k")},
	violations: []string{"k: node-2#3@16 over node-2#2@15"},
	open:       2,
}, {
	name: "re-entering a key it believes it holds is a protocol error, not a new belief",
	events: []chaos.Event{
		enter(10, "go-1", "k"), enter(15, "go-1", "k"), exit(20, "go-1", "k"), enter(25, "node-1", "k"),
		exit(30, "node-1", "k"),
	},
	errors: []string{"already believes it holds (since t=10)"},
}, {
	name:       "re-entering while another believes is a violation too",
	events:     []chaos.Event{enter(10, "go-1", "k"), enter(12, "node-1", "k"), enter(14, "node-1", "k")},
	violations: []string{"k: node-1@12 over go-1@10", "k: node-1@14 over go-1@10"},
	errors:     []string{"already believes"},
	open:       2,
}, {
	name:   "an event after the holder was killed is a protocol error",
	events: []chaos.Event{enter(10, "node-1", "k"), killed(20, "node-1"), enter(30, "node-1", "k")},
	errors: []string{"after the holder was killed at t=20"},
}, {
	name:   "the holder's own events at the killed nanosecond come first, whatever the file order",
	events: []chaos.Event{killed(20, "node-1"), enter(10, "node-1", "k"), exit(20, "node-1", "k")},
}, {
	name:   "invalid events made in memory are protocol errors",
	events: []chaos.Event{{T: 1, Holder: "go-1", Ev: "bogus", Key: "k"}, {T: 2, Holder: "go-1", Ev: chaos.Enter}, {T: 3, Ev: chaos.Exit, Key: "k"}},
	errors: []string{`unknown ev "bogus"`, "without a key", "no holder"},
}}

func TestCheck(t *testing.T) {
	for _, tt := range checkTests {
		t.Run(tt.name, func(t *testing.T) {
			r := chaos.Check(tt.events)
			var got []string
			for _, v := range r.Violations {
				got = append(got, brief(v))
			}
			require.Equal(t, tt.violations, got, "Check(%v).Violations", tt.events)
			require.Len(t, r.Errors, len(tt.errors), "Check(%v).Errors = %v", tt.events, r.Errors)
			for i, want := range tt.errors {
				require.Contains(t, r.Errors[i].Reason, want)
			}
			require.Equal(t, tt.open, r.Open, "Check(%v).Open", tt.events)
			require.Equal(t, len(tt.violations) == 0 && len(tt.errors) == 0, r.OK())
			require.Equal(t, len(tt.events), r.Events)
		})
	}
}

func TestCheckCounts(t *testing.T) {
	r := chaos.Check([]chaos.Event{
		enter(100, "go-1", "a"), exit(110, "go-1", "a"),
		enter(120, "node-3#2", "a"), lost(130, "node-3#2", "a"),
		enter(140, "run-7", "b"), killed(150, "run-7"),
		enter(160, "stock-1", "b"), exit(170, "stock-1", "b"),
		enter(180, "go-1", "a"),
		enter(190, "solo", "c"),
	})
	require.Equal(t, map[string]int{"a": 3, "b": 2, "c": 1}, r.Enters)
	require.Equal(t, map[string]int{"go": 2, "node": 1, "run": 1, "stock": 1, "solo": 1}, r.EntersByKind)
	require.Equal(t, 1, r.Killed)
	require.Equal(t, 2, r.Open)
	require.Equal(t, int64(100), r.Start)
	require.Equal(t, int64(190), r.End)
	require.True(t, r.OK())
}

func TestReportString(t *testing.T) {
	r := chaos.Check([]chaos.Event{
		enter(1_000_000_000, "go-1", "a"),
		{T: 1_500_000_000, Holder: "node-1", Ev: chaos.Enter, Key: "a", File: "node-1.jsonl", Line: 4},
		enter(1_600_000_000, "go-1", "a"),
	})
	lines := strings.Split(r.String(), "\n")
	require.Equal(t, []string{
		"chaos: 3 events over 600ms, 3 enters (go 2, node 1) on 1 keys (a 3), 0 killed, 2 open at the end: 2 violations, 1 protocol errors",
		`violation: key "a" at +500ms: node-1 entered while go-1 believed it held it since +0s (500ms earlier) [node-1.jsonl:4 vs -]`,
		`violation: key "a" at +600ms: go-1 entered while node-1 believed it held it since +500ms (100ms earlier) [- vs node-1.jsonl:4]`,
		`protocol error: go-1 enter "a" at t=1600000000: entered a key it already believes it holds (since t=1000000000)`,
	}, lines)

	require.Equal(t, "chaos: 0 events over 0s, 0 enters (none) on 0 keys (none), 0 killed, 0 open at the end: 0 violations, 0 protocol errors",
		chaos.Check(nil).String())
}

func TestHolderKind(t *testing.T) {
	for holder, want := range map[string]string{
		"go-1": "go", "node-2#7": "node", "run-3-b": "run", "stock-1": "stock", "poller": "poller", "": "",
	} {
		require.Equal(t, want, chaos.HolderKind(holder), "HolderKind(%q)", holder)
	}
}
