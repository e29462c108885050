package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/glob"
	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// lockJSON is one element of list --json.
type lockJSON struct {
	// Key is the lock key without the namespace.
	Key string `json:"key"`
	// RedisKey is the full Redis key.
	RedisKey string `json:"redis_key"`
	// Owner is the owner id; "" for a foreign key.
	Owner string `json:"owner"`
	// TTLms is the time to live in milliseconds, -1 for a key that never expires.
	TTLms int64 `json:"ttl_ms"`
	// Foreign marks a key under the namespace that is not a lock; absent for locks.
	Foreign bool `json:"foreign,omitempty"`
	// Holder is the lock's holder record (who holds it, since when, its fencing token); null
	// for a lock taken by a client that writes none (stock Medusa).
	Holder *holderJSON `json:"holder"`
}

func runList(ctx context.Context, s *session, o *options, p parsedArgs) int {
	if args := p.all(); len(args) > 0 {
		return s.fail(usagef("list", "list takes no arguments, got %q", args[0]))
	}
	keep, err := o.listFilter()
	if err != nil {
		return s.fail(err)
	}
	c, err := s.connect(ctx, o)
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	limiter := s.limiter()
	progress := s.walkProgress(c.client, limiter.Now)
	locks, err := c.ops.ListWith(ctx, s.pacedScan(limiter, progress.examined))
	progress.done()
	if err != nil {
		return s.fail(err)
	}
	locks = slices.DeleteFunc(locks, func(l operator.Lock) bool { return !keep(l) })
	slices.SortFunc(locks, func(a, b operator.Lock) int { return strings.Compare(a.Key, b.Key) })
	if o.json {
		err = writeJSON(s.stdout, locks)
	} else {
		err = writeTable(s.stdout, locks, o.namespace, o.filtered())
	}
	if err != nil {
		return s.fail(fmt.Errorf("write the list: %w", err))
	}
	return ExitOK
}

// pacedScan is how the CLI walks the namespace (list, release-all and the completion of keys
// and owners): paced like the console's refreshes, within budget.Default units a second with a
// SCAN counted as the operator.ScanCount keys it examines (docs/console-cost.md), so that a walk
// of a database of millions of keys takes longer instead of loading Redis with a burst of SCANs.
// limiter is its budget (s.limiter). examined, if not nil, is called before each round trip with
// about how many keys of the database the walk's SCANs will have examined (concurrently for the
// masters of a Cluster).
func (s *session) pacedScan(limiter *budget.Limiter, examined func(ctx context.Context, keys int64)) operator.ScanOptions {
	var n atomic.Int64
	return operator.ScanOptions{Pace: func(ctx context.Context, scans, reads int) error {
		if examined != nil {
			examined(ctx, n.Add(int64(scans*operator.ScanCount)))
		}
		return limiter.Wait(ctx, scans*operator.ScanCount+reads)
	}}
}

// limiter returns a new read budget for one walk: App.Budget's, else budget.Default units a
// second.
func (s *session) limiter() *budget.Limiter {
	if s.app.Budget != nil {
		return s.app.Budget()
	}
	return budget.New(budget.Default)
}

// listFilter returns the test that list's --match, --owner and --no-ttl make of a key.
func (o *options) listFilter() (func(operator.Lock) bool, error) {
	if o.set["owner"] && o.owner == "" {
		return nil, usagef("list", "--owner is empty; use \"*\" for the anonymous owner")
	}
	return func(l operator.Lock) bool {
		switch {
		case o.set["match"] && !glob.Match(o.match, l.Key):
			return false
		case o.set["owner"] && (l.Foreign || l.Owner != o.owner):
			return false
		case o.noTTL && l.TTL != provider.NoExpiry:
			return false
		}
		return true
	}, nil
}

// filtered reports whether list was given a filter.
func (o *options) filtered() bool { return o.set["match"] || o.set["owner"] || o.noTTL }

// writeJSON prints locks as one JSON array on one line.
func writeJSON(w io.Writer, locks []operator.Lock) error {
	out := make([]lockJSON, 0, len(locks))
	for _, l := range locks {
		out = append(out, lockJSON{Key: l.Key, RedisKey: l.RedisKey, Owner: l.Owner, TTLms: ttlMillis(l.TTL), Foreign: l.Foreign,
			Holder: holderJSONOf(l.Record)})
	}
	return json.NewEncoder(w).Encode(out)
}

// ttlMillis is a TTL in milliseconds for JSON: -1 for a key that never expires.
func ttlMillis(d time.Duration) int64 {
	if d == provider.NoExpiry {
		return -1
	}
	return d.Milliseconds()
}

// writeTable prints locks as an aligned KEY, OWNER, TTL table; filtered says that list's
// filters chose them, for the line printed when there are none.
func writeTable(w io.Writer, locks []operator.Lock, namespace string, filtered bool) error {
	switch {
	case len(locks) == 0 && filtered:
		_, err := fmt.Fprintf(w, "No locks under namespace %q match the filters.\n", namespace)
		return err
	case len(locks) == 0:
		_, err := fmt.Fprintf(w, "No locks under namespace %q.\n", namespace)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tOWNER\tTTL")
	for _, l := range locks {
		owner := display(l.Owner)
		if l.Foreign {
			owner = "(foreign: not a lock)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", display(l.Key), owner, formatTTL(l.TTL))
	}
	return tw.Flush()
}

// formatTTL shows a time to live: textfmt.NoExpiry ("no expiry"), milliseconds under a second,
// tenths of a second under a minute, whole seconds above.
func formatTTL(d time.Duration) string {
	switch {
	case d == provider.NoExpiry:
		return textfmt.NoExpiry
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
