package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/locktui/locktui/provider"
)

// Version is the message format version this package writes and reads ("v").
const Version = 1

// ChannelPrefix starts the pub/sub channel of every namespace.
const ChannelPrefix = "locktui:events:"

// Sources of events, as the project's publishers name themselves ("source").
const (
	SourceGo     = "go"
	SourceBridge = "bridge"
	SourceCLI    = "cli"
	SourceDemo   = "demo"
)

// ErrMalformed is returned by Decode for a message that is not a valid lock event.
var ErrMalformed = errors.New("events: malformed event")

// Event is the wire form of one lock event, a provider.Event (the project's one lock-event
// type), as it travels on the channel: its fields in JSON, plus where it came from.
type Event struct {
	// V is the format version, Version.
	V int `json:"v"`
	// Kind is what happened: waiting, acquired, released, gave_up, renewed or lost.
	Kind provider.EventKind `json:"kind"`
	// Key is the lock key without namespace.
	Key string `json:"key"`
	// Owner is the owner id the event is about.
	Owner string `json:"owner"`
	// TS is when it happened, in Unix milliseconds.
	TS int64 `json:"ts"`
	// WaitMS is the time spent waiting, on acquired and gave_up.
	WaitMS int64 `json:"wait_ms"`
	// HeldMS is the time the key was held, on released, renewed and lost.
	HeldMS int64 `json:"held_ms"`
	// Source names the kind of process that published it: go, bridge, cli or demo.
	Source string `json:"source"`
	// Host is the publisher's host name.
	Host string `json:"host"`
	// PID is the publisher's process id.
	PID int `json:"pid"`
}

// Time returns TS as a time.Time.
func (e Event) Time() time.Time { return time.UnixMilli(e.TS) }

// Wait returns WaitMS as a duration.
func (e Event) Wait() time.Duration { return time.Duration(e.WaitMS) * time.Millisecond }

// Held returns HeldMS as a duration.
func (e Event) Held() time.Duration { return time.Duration(e.HeldMS) * time.Millisecond }

// ChannelFor returns the pub/sub channel of namespace, e.g. "locktui:events:medusa_lock:".
// An empty namespace means provider.DefaultNamespace, as in the provider.
func ChannelFor(namespace string) string {
	if namespace == "" {
		namespace = provider.DefaultNamespace
	}
	return ChannelPrefix + namespace
}

// fromProvider converts a provider event, stamping it with its origin.
func fromProvider(e provider.Event, source, host string, pid int) Event {
	ts := e.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	return Event{
		V:      Version,
		Kind:   e.Kind,
		Key:    e.Key,
		Owner:  e.Owner,
		TS:     ts.UnixMilli(),
		WaitMS: e.Wait.Milliseconds(),
		HeldMS: e.Held.Milliseconds(),
		Source: source,
		Host:   host,
		PID:    pid,
	}
}

// knownKinds are the kinds a version 1 message may carry.
var knownKinds = map[provider.EventKind]bool{
	provider.EventWaiting:  true,
	provider.EventAcquired: true,
	provider.EventReleased: true,
	provider.EventGaveUp:   true,
	provider.EventRenewed:  true,
	provider.EventLost:     true,
}

// Decode parses one message. It fails with ErrMalformed for anything but a JSON object of
// version 1 with a known kind and a non-empty key. Unknown fields are ignored, so publishers
// may add fields without breaking older subscribers.
func Decode(payload []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(payload, &e); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case e.V != Version:
		return Event{}, fmt.Errorf("%w: version %d, want %d", ErrMalformed, e.V, Version)
	case !knownKinds[e.Kind]:
		return Event{}, fmt.Errorf("%w: unknown kind %q", ErrMalformed, e.Kind)
	case e.Key == "":
		return Event{}, fmt.Errorf("%w: no key", ErrMalformed)
	}
	return e, nil
}

// Encode renders e as the JSON message published on the channel.
func (e Event) Encode() ([]byte, error) { return json.Marshal(e) }
