// Package tui is locktui's console: a live, k9s-like view of every lock under a namespace of a
// Medusa-compatible Redis lock store, built on Bubble Tea v2.
//
// Run it with Run(ctx, Config). It shows four views — locks, owners, hot locks, the detail of
// one key — with a status bar that always says where it is connected and how fresh its data
// is; when Redis goes away it keeps the last data marked STALE and reconnects with backoff.
//
// # Keys
//
//	↑/k ↓/j pgup pgdn g G   move                  tab S-tab 1-4   views
//	enter   detail (owners: the owner's locks)    esc             back / clear the filter
//	t       owners view: group by process / by owner id
//	/       filter: substring, glob with * ? [, owner:… for owners, holder:… for the holding
//	        process, =KEY (read at once)
//	:       view by name (:locks :owners :hot :detail :help :q), as in k9s
//	s S     next sort column / reverse            p               sample contention 30 s (paid)
//	c C     copy the selected key / owner (OSC 52)
//	r       refresh now                           ?               help
//	d       force-release the selected lock (confirm with y; compare-and-delete on the hold shown:
//	        its owner and fencing token)
//	D       release every lock of the selected owner (confirm with y; compare-and-unlink per key;
//	        refused for the empty owner "", whose keys d releases one by one)
//	q       quit (also ctrl+c): at most ~1 s even when Redis stalls (a release under way and
//	        its audit record are waited for)
//
// In read-only mode (Config.ReadOnly) d and D are disabled and left out of the help, an RO badge
// shows, and a go-redis hook on the client (on a Cluster, also on every node's client) refuses
// every command that is not a read (redisconn.GuardReadOnly).
//
// # Data and cost
//
// The lock table comes from full refreshes (SCAN … MATCH plus GET, PTTL and the holder record per lock, paced to
// Config.Budget) and, when the server publishes keyspace notifications, from the re-read of each
// notified key, with TTLs counting down locally and a full refresh only to repair drift. What
// that costs, the budget and the measured numbers are stated once, in docs/console-cost.md. An
// exact filter (/=KEY) reads that key at once (outside the budget: the operator named it), so a
// stuck key is found without waiting for the scan; while the first refresh runs, an empty table
// says how far it is (keys examined of DBSIZE), never "no match". Lock events from pub/sub
// (package events) give waiters and attempts per second per key (a subscription that fails, at
// start or after an outage, is retried with backoff while Redis answers); for keys only stock
// Medusa processes use, "p" samples the keys on screen for 30 s (its cost is shown while it
// runs).
//
// The source owns the background work, k9s style: a source.Watcher's scheduler runs the
// heartbeat, the full refreshes, the keyspace and lock-event feeds, the re-reads of countdowns
// at zero, the sampling runs the operator starts and the hub's builds as jobs, each with its
// due time and one backoff (the pacing rules are all in tui/source/scheduler.go), and hands the
// program a source.Update (a status snapshot, and a notice) on every change; the root model
// only shows them and schedules no refresh. Filtering and sorting run in the source.Hub's build
// job, never in Update, and reach the program as immutable Views; only the rows on screen are
// rendered. No Redis call happens in Update: the operator's one-off actions (an exact lookup,
// a release) run in tea.Cmds and their results come back as messages.
//
// Every mutation goes through audit.Releaser, the CLI's path too, and is written to
// Config.Audit (time, operator, key, owner, result); the dialog names where (audit.Where), and
// a failed audit write is shown on screen. Dialogs and results show owners quoted ("" and " "
// are owners too); the tables show keys and owners through operator.Printable, which quotes
// and escapes those that would not print.
//
// # Columns
//
// HOLDER names the process in the lock's holder record (program/pid@host, shortened host first;
// "no record" for a lock taken by stock Medusa or an older client). HELD counts from the
// record's acquired-at (Redis server time); without record it is the time since this console
// first saw the owner hold the key, a lower bound marked "≥", never passed off as the hold. The
// detail view adds the fencing token (docs/fencing.md). The owners view groups by owner id or by
// process (the locks without record in one row) and lists the selected group's oldest locks
// under its table. TTL counts down in tenths, never rounded up; a key of another type without
// expiry reads "no expiry". GONE rows come after the live ones in every order. Keys and owners
// too wide for their column are shortened in the middle, and the two lines under the locks table
// show the selected key and owner whole, and its holder.
package tui
