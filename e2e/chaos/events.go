package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// EventKind is what an event says happened.
type EventKind string

// The kinds of event a log holds.
const (
	// Enter: the holder's acquire of Key succeeded; it believes it holds Key.
	Enter EventKind = "enter"
	// Exit: the holder is about to release Key; it no longer believes it holds it.
	Exit EventKind = "exit"
	// Lost: the holder was told it lost Key.
	Lost EventKind = "lost"
	// Killed: the scheduler SIGKILLed the holder's process and reaped it; no Key.
	Killed EventKind = "killed"
)

// Event is one line of a log. It is not a lock event (provider.Event, whose wire form is
// events.Event): it records what one holder believed (entered, left, was told it lost Key) at a
// monotonic instant, as the holder's own code saw it, whichever provider it runs (stock Medusa
// included); the checker compares those beliefs across holders, and a lock event would say what
// a provider did instead.
type Event struct {
	// T is when it happened: CLOCK_MONOTONIC nanoseconds (MonoNow).
	T int64 `json:"t"`
	// Holder is the holder's unique id, e.g. "node-2#7".
	Holder string `json:"holder"`
	// Key is the lock key; empty for Killed.
	Key string `json:"key,omitempty"`
	// Ev is what happened.
	Ev EventKind `json:"ev"`
	// File and Line say where ReadLogs read the event (Line counts from 1); not in the log.
	File string `json:"-"`
	Line int    `json:"-"`
}

// Where returns "file:line" for an event ReadLogs read, "" for one made in memory.
func (e Event) Where() string {
	if e.File == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", e.File, e.Line)
}

// HolderKind returns the kind of a holder id: the part before the first '-' ("node" for
// "node-2#7"), or the whole id when it has no '-'.
func HolderKind(holder string) string {
	kind, _, _ := strings.Cut(holder, "-")
	return kind
}

// validate reports what is wrong with an event, or nil.
func (e Event) validate() error {
	switch {
	case e.T < 0:
		return fmt.Errorf("negative t %d", e.T)
	case e.Holder == "":
		return errors.New("no holder")
	}
	switch e.Ev {
	case Enter, Exit, Lost:
		if e.Key == "" {
			return fmt.Errorf("%q without a key", e.Ev)
		}
	case Killed:
		if e.Key != "" {
			return fmt.Errorf("%q takes no key (got %q)", e.Ev, e.Key)
		}
	default:
		return fmt.Errorf("unknown ev %q", e.Ev)
	}
	return nil
}

// ReadLogs reads the events of the given log files, file by file, each in the order of its
// lines. The last line of a file, when it does not end in a newline and is not a valid event,
// is skipped: its writer was killed while writing it. Any other line that is not a valid event
// (blank lines included) is an error naming file and line.
func ReadLogs(paths ...string) ([]Event, error) {
	var events []Event
	for _, path := range paths {
		var err error
		if events, err = readLog(path, events); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// readLog appends the events of one file to events.
func readLog(path string, events []Event) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer func() { _ = f.Close() }()
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		text, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(text) == 0 {
			return events, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("chaos: %s:%d: %w", path, line, err)
		}
		complete := err == nil // ends in a newline
		e, perr := parseEvent(bytes.TrimSuffix(text, []byte("\n")))
		if perr != nil {
			if !complete {
				return events, nil // cut short by a SIGKILL
			}
			return nil, fmt.Errorf("chaos: %s:%d: %w", path, line, perr)
		}
		e.File, e.Line = path, line
		events = append(events, e)
		if !complete {
			return events, nil
		}
	}
}

// parseEvent decodes one line.
func parseEvent(line []byte) (Event, error) {
	var raw struct {
		T      *int64  `json:"t"`
		Holder *string `json:"holder"`
		Key    *string `json:"key"`
		Ev     *string `json:"ev"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Event{}, fmt.Errorf("malformed event %q: %w", line, err)
	}
	if raw.T == nil || raw.Holder == nil || raw.Ev == nil {
		return Event{}, fmt.Errorf("malformed event %q: t, holder and ev are required", line)
	}
	e := Event{T: *raw.T, Holder: *raw.Holder, Ev: EventKind(*raw.Ev)}
	if raw.Key != nil {
		e.Key = *raw.Key
	}
	if err := e.validate(); err != nil {
		return Event{}, fmt.Errorf("invalid event %q: %w", line, err)
	}
	return e, nil
}
