package provider

import (
	"fmt"
	"time"
)

// Stock's turns. Our clients hand a contended lock on within a round trip (a wake-up, then one
// attempt), while stock Medusa polls with a backoff that grows to a second: beside our
// clients, a stock process would hardly ever find the lock free, and sustained contention on
// one key would starve it. So while processes that write no holder record contend for a lock,
// our clients share it with them in turns, kept in the lock's share record (lib.lua):
//
//   - One of ours finding the lock held by such a process (no holder record, or one of
//     another owner) creates or refreshes the record, which then lives shareMemory.
//   - While the record lives, the first acquisition of ours of the free lock starts our run;
//     the delete of ours that frees the lock shareRun or more after that leaves the lock free
//     for the others for shareWindow: our acquisitions find it "left to others" (a negative
//     acquire.lua status, counted as held) and wait until the window ends, when the first of
//     them that tries takes it if nobody else did.
//   - A stock process that takes it keeps it for as long as its own callers re-take it; our
//     waiters find it held, poll as stock does, and start a new run when they get it.
//
// Without stock processes the record never exists and nothing changes (one EXISTS per
// acquisition). The window is what a stock poller needs to find the lock free: a stock worker
// under contention polls every 0.5–1 s, so eight of them arrive within 150 ms in about four
// windows out of five.
const (
	shareRun    = 250 * time.Millisecond
	shareWindow = 150 * time.Millisecond
	shareMemory = 5 * time.Second
)

// shareConstants defines the constants above for the scripts, in front of lib.lua.
var shareConstants = fmt.Sprintf("local SHARE_RUN, SHARE_WINDOW, SHARE_MEMORY = %d, %d, %d\n",
	shareRun.Milliseconds(), shareWindow.Milliseconds(), shareMemory.Milliseconds())

// isHeld tells whether an acquire.lua status leaves the key to someone else: held, or free but
// left to others for now.
func isHeld(status int64) bool { return status <= acquireHeld }

// shareKey is the key of the share record of lock key rk: outside every namespace and in rk's
// Cluster slot, as recordKey.
func shareKey(rk string) string {
	if tag, ok := hashTag(rk); ok {
		return "locktui:{" + tag + "}:share:" + rk
	}
	return "locktui:{" + rk + "}:share"
}
