// Package chaos checks the logs of a chaos run for mutual-exclusion violations, and gives Go
// holders the clock those logs are written on (MonoNow).
//
// In a chaos run many lock holders (Go, Node, shell, in processes of their own) take a few
// shared keys while faults are injected. Each holder appends JSON lines to a log file of its
// own, one line per event, written with one write so that a SIGKILL can cut only the last line:
//
//	{"t": 91234567890123, "holder": "node-2#7", "key": "cart:1", "ev": "enter"}
//
// Its fields:
//   - t: CLOCK_MONOTONIC in nanoseconds (MonoNow; process.hrtime.bigint() in Node), as a JSON
//     integer;
//   - holder: a unique, opaque holder id; the part before the first '-' is its kind ("go",
//     "node", "run", "stock", "poller"); an id reused by a later process carries a suffix
//     ("node-2#7");
//   - key: the lock key;
//   - ev: "enter" right after an acquire succeeded (the holder now believes it holds key),
//     "exit" just before the release is sent (it stops believing), "lost" when it was told it
//     lost the lock (context cancelled, AbortSignal aborted, SIGTERM received).
//
// The scheduler logs {"t": …, "holder": …, "ev": "killed"} (no key) after it SIGKILLed a holder's
// process and reaped it: every open belief of that holder ends then (conservatively late).
//
// A holder's belief on a key runs from its enter to its first exit or lost after it (or its
// killed). Check reports every enter made while another holder believed it held the same key:
// a violation of mutual exclusion. Events at the same nanosecond are ordered exit, lost and
// killed before enter, so a hand-over logged on one tick is not a violation. Fields other than
// these four are ignored, so a writer may add its own (a pid, an attempt number).
//
// Go writers use Log (OpenLog, then Log.Now at each event), which writes that format. The run
// itself is TestChaos in package e2e; its Go holders are the modes of e2e/chaos/holder, its
// Node holders e2e/node/chaos-holder.js.
package chaos
