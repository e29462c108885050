package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// Field is an extra field of a logged event (the lease owner of an enter, a pid), which Check
// ignores and people reading a log use.
type Field struct {
	Name  string
	Value any
}

// Log appends events to one log file in the format ReadLogs reads, each line with a single
// write(2) on a file opened with O_APPEND, so that a SIGKILL can cut at most the last line and
// several processes may share the file. Its methods are safe for concurrent use.
type Log struct {
	f *os.File
}

// OpenLog opens (creating it if needed) the log file at path for appending.
func OpenLog(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return &Log{f: f}, nil
}

// Now logs an event stamped with MonoNow at the moment of the call and returns that stamp.
func (l *Log) Now(holder, key string, ev EventKind, fields ...Field) (int64, error) {
	t := MonoNow()
	return t, l.Append(Event{T: t, Holder: holder, Key: key, Ev: ev}, fields...)
}

// Append logs e (its T as given: an event observed earlier may be written later) with the extra
// fields after the four of the format. It refuses an invalid event and a field that shadows
// one of the four.
func (l *Log) Append(e Event, fields ...Field) error {
	if err := e.validate(); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	line, err := encodeEvent(e, fields)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

// encodeEvent renders one line, newline included: t as a plain integer, then holder, key (not
// for killed), ev and the extra fields in the order given.
func encodeEvent(e Event, fields []Field) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"t":`)
	b.WriteString(strconv.FormatInt(e.T, 10))
	put := func(name string, value any) error {
		v, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("chaos: field %q: %w", name, err)
		}
		n, _ := json.Marshal(name)
		b.WriteByte(',')
		b.Write(n)
		b.WriteByte(':')
		b.Write(v)
		return nil
	}
	_ = put("holder", e.Holder)
	if e.Key != "" {
		_ = put("key", e.Key)
	}
	_ = put("ev", string(e.Ev))
	for _, f := range fields {
		switch f.Name {
		case "t", "holder", "key", "ev":
			return nil, fmt.Errorf("chaos: extra field %q would shadow the event's own", f.Name)
		}
		if err := put(f.Name, f.Value); err != nil {
			return nil, err
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}
