package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Violation is an enter made while another holder believed it held the same key.
type Violation struct {
	// Key is the lock key.
	Key string
	// Holder entered Key at At.
	Holder string
	At     int64
	// Believer still believed it held Key at At; it had entered at Since.
	Believer string
	Since    int64
	// Where and BelieverWhere are the file:line of the two enters ("" for events made in
	// memory).
	Where, BelieverWhere string
}

// ProtocolError is an event that breaks the log protocol: a holder entering a key it already
// believes it holds, an event of a holder after it was killed, or (for events not read by
// ReadLogs) an invalid event.
type ProtocolError struct {
	Event  Event
	Reason string
}

// Error describes the event and what is wrong with it.
func (e ProtocolError) Error() string {
	where := e.Event.Where()
	if where != "" {
		where += ": "
	}
	return fmt.Sprintf("%s%s %s %q at t=%d: %s", where, e.Event.Holder, e.Event.Ev, e.Event.Key,
		e.Event.T, e.Reason)
}

// Report is what Check found.
type Report struct {
	// Events is how many events were checked; Start and End are the first and last t (0 when
	// there were none).
	Events     int
	Start, End int64
	// Enters counts the enters per key, EntersByKind per holder kind (HolderKind).
	Enters       map[string]int
	EntersByKind map[string]int
	// Killed is how many holders were killed.
	Killed int
	// Open is how many beliefs were still open at the end (holders still running, or that
	// ended without logging it); fine, but worth knowing.
	Open int
	// Violations are the breaches of mutual exclusion, by time.
	Violations []Violation
	// Errors are the breaches of the log protocol, by time.
	Errors []ProtocolError
}

// OK reports whether the run had neither violations nor protocol errors.
func (r Report) OK() bool { return len(r.Violations) == 0 && len(r.Errors) == 0 }

// belief is one holder believing it holds one key, from its enter to its end.
type belief struct {
	enter  Event
	end    int64 // when it stopped; meaningful when ended
	ended  bool
	active bool // in the sweep: started and not yet ended
	done   bool // in the sweep: its end was passed (possibly before its own enter, at the same t)
}

// point is an instant the sweep over one key looks at: an enter, or the end of a belief.
type point struct {
	t      int64
	isEnd  bool
	order  int     // position in the sorted events: breaks ties among enters
	enter  Event   // for an enter
	starts *belief // for an enter: the belief it starts; nil for a re-enter
	ends   *belief // for an end
}

// Check finds the violations and protocol errors in the events of a run (from ReadLogs, in any
// order of files). Events are taken in order of t; at the same t, exit, lost and killed come
// before enter, and the events of one holder keep the order they were given in (the order of
// its log), with its killed last.
func Check(events []Event) Report {
	r := Report{Events: len(events), Enters: map[string]int{}, EntersByKind: map[string]int{}}
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(rankKilled(a), rankKilled(b)))
	})
	if len(sorted) > 0 {
		r.Start, r.End = sorted[0].T, sorted[len(sorted)-1].T
	}

	// Each holder's beliefs, from its own events in order.
	type holderState struct {
		open     map[string]*belief // by key
		killed   bool
		killedAt int64
	}
	holders := map[string]*holderState{}
	points := map[string][]point{} // by key
	var beliefs []*belief
	for i, e := range sorted {
		if err := e.validate(); err != nil {
			r.Errors = append(r.Errors, ProtocolError{e, err.Error()})
			continue
		}
		h := holders[e.Holder]
		if h == nil {
			h = &holderState{open: map[string]*belief{}}
			holders[e.Holder] = h
		}
		if h.killed && e.Ev != Killed {
			r.Errors = append(r.Errors, ProtocolError{e, fmt.Sprintf(
				"logged after the holder was killed at t=%d (a reused holder id?)", h.killedAt)})
			continue
		}
		switch e.Ev {
		case Enter:
			r.Enters[e.Key]++
			r.EntersByKind[HolderKind(e.Holder)]++
			p := point{t: e.T, order: i, enter: e}
			if b := h.open[e.Key]; b != nil {
				r.Errors = append(r.Errors, ProtocolError{e, fmt.Sprintf(
					"entered a key it already believes it holds (since t=%d)", b.enter.T)})
			} else {
				p.starts = &belief{enter: e}
				h.open[e.Key] = p.starts
				beliefs = append(beliefs, p.starts)
			}
			points[e.Key] = append(points[e.Key], p)
		case Exit, Lost:
			if b := h.open[e.Key]; b != nil {
				b.end, b.ended = e.T, true
				delete(h.open, e.Key)
			} // else a lost after an exit, or an exit without an enter: nothing believed
		case Killed:
			if h.killed {
				continue
			}
			h.killed, h.killedAt = true, e.T
			r.Killed++
			for key, b := range h.open {
				b.end, b.ended = e.T, true
				delete(h.open, key)
			}
		}
	}
	for _, b := range beliefs {
		if b.ended {
			points[b.enter.Key] = append(points[b.enter.Key], point{t: b.end, isEnd: true, ends: b})
		} else {
			r.Open++
		}
	}

	for _, key := range slices.Sorted(maps.Keys(points)) {
		r.Violations = append(r.Violations, sweep(key, points[key])...)
	}
	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.Key, b.Key),
			strings.Compare(a.Holder, b.Holder), strings.Compare(a.Believer, b.Believer))
	})
	slices.SortStableFunc(r.Errors, func(a, b ProtocolError) int { return cmp.Compare(a.Event.T, b.Event.T) })
	return r
}

// rankKilled orders a holder's killed after its own events at the same t: the scheduler logs
// it after the process is gone.
func rankKilled(e Event) int {
	if e.Ev == Killed {
		return 1
	}
	return 0
}

// sweep walks the enters and belief ends of one key in time order (ends first at the same t)
// and returns every enter made while another holder's belief was active.
func sweep(key string, points []point) []Violation {
	slices.SortFunc(points, func(a, b point) int {
		return cmp.Or(cmp.Compare(a.t, b.t), -cmp.Compare(btoi(a.isEnd), btoi(b.isEnd)),
			cmp.Compare(a.order, b.order))
	})
	var (
		active []*belief // by enter order
		found  []Violation
	)
	for _, p := range points {
		if p.isEnd {
			p.ends.done = true
			if p.ends.active {
				p.ends.active = false
				active = slices.DeleteFunc(active, func(b *belief) bool { return b == p.ends })
			}
			continue
		}
		for _, b := range active {
			if b.enter.Holder != p.enter.Holder {
				found = append(found, Violation{
					Key: key, Holder: p.enter.Holder, At: p.t,
					Believer: b.enter.Holder, Since: b.enter.T,
					Where: p.enter.Where(), BelieverWhere: b.enter.Where(),
				})
			}
		}
		if b := p.starts; b != nil && !b.done { // a belief ended on the tick it began holds nothing
			b.active = true
			active = append(active, b)
		}
	}
	return found
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// String returns one summary line, then one line per violation and per protocol error.
func (r Report) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "chaos: %d events over %v, %d enters (%s) on %d keys (%s), %d killed, %d open at the end: %d violations, %d protocol errors",
		r.Events, time.Duration(r.End-r.Start), sum(r.Enters), counts(r.EntersByKind), len(r.Enters),
		counts(r.Enters), r.Killed, r.Open, len(r.Violations), len(r.Errors))
	for _, v := range r.Violations {
		fmt.Fprintf(&s, "\nviolation: key %q at +%v: %s entered while %s believed it held it since +%v (%v earlier)",
			v.Key, time.Duration(v.At-r.Start), v.Holder, v.Believer, time.Duration(v.Since-r.Start),
			time.Duration(v.At-v.Since))
		if v.Where != "" || v.BelieverWhere != "" {
			fmt.Fprintf(&s, " [%s vs %s]", cmp.Or(v.Where, "-"), cmp.Or(v.BelieverWhere, "-"))
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&s, "\nprotocol error: %v", e)
	}
	return s.String()
}

// counts formats a count map as "a 1, b 2", by name.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
