// Package statusbar renders the two status lines: where the console is connected and how
// fresh and how costly its data is.
package statusbar

import (
	"fmt"
	"strings"
	"time"

	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/tui/common"
)

// Status is what the status bar says.
type Status struct {
	// URL is the server, password redacted; DB its database; Namespace the key prefix.
	URL       string
	DB        int
	Namespace string
	// Version is the Redis version (INFO server), "" until known.
	Version string
	// Latency is the last PING round trip.
	Latency time.Duration
	// Locks is the number of locks; Loaded is false until the first refresh completed.
	Locks  int
	Loaded bool
	// Refresh says how the data is refreshed: "poll 1s", "keyspace events + rescan 5m00s".
	Refresh string
	// Events says whether lock events arrive ("events", "no events: …").
	Events string
	// ReadOnly shows the RO badge.
	ReadOnly bool
	// Stale is set when the data on screen is old; Age is the age of the last good data.
	Stale bool
	Age   time.Duration
	// Reconnecting is set while Redis does not answer; RetryIn is the wait before the next
	// attempt.
	Reconnecting bool
	RetryIn      time.Duration
	// Sampling describes a sampling run in progress ("" when none).
	Sampling string
}

// Render returns the two status lines, each cut to width.
func Render(c *common.Common, s Status) string {
	st := c.Styles
	sep := st.StatusKey.Render(" · ")
	version := s.Version
	if version == "" {
		version = "?"
	}
	line1 := strings.Join([]string{
		s.URL + " db" + fmt.Sprint(s.DB),
		st.StatusKey.Render("ns ") + s.Namespace,
		st.StatusKey.Render("redis ") + version,
	}, sep)

	var parts []string
	if s.ReadOnly {
		parts = append(parts, st.Badge.Render(" RO "))
	}
	if s.Stale {
		parts = append(parts, st.Stale.Render("STALE "+common.Duration(s.Age)))
	}
	if s.Reconnecting {
		r := "RECONNECTING"
		if s.RetryIn > 0 {
			r += " in " + common.TTL(s.RetryIn)
		}
		parts = append(parts, st.Stale.Render(r))
	}
	locks := "loading…"
	if s.Loaded {
		locks = textfmt.Count(s.Locks) + " locks"
		if s.Locks == 1 {
			locks = "1 lock"
		}
	}
	parts = append(parts, st.StatusKey.Render("ping ")+latency(s), locks, s.Refresh)
	if s.Events != "" {
		parts = append(parts, s.Events)
	}
	if s.Sampling != "" {
		parts = append(parts, st.Info.Render(s.Sampling))
	}
	line2 := strings.Join(parts, sep)
	return st.Status.Render(common.Truncate(line1, c.Width)) + "\n" + st.Status.Render(common.Truncate(line2, c.Width))
}

func latency(s Status) string {
	if s.Reconnecting || s.Latency == 0 {
		return "-"
	}
	return common.Latency(s.Latency)
}
