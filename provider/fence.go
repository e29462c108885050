package provider

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/locktui/locktui/internal/lockwire"
)

// Fencing tokens (see docs/fencing.md). Every acquisition that takes a free lock gets a new token
// from acquire.lua, in the same script run: the Redis server's time in microseconds, kept in the
// lock's holder record and gone with it. Tokens on one key increase strictly across holds as long
// as the server's clock does not step back between two holds of the key (a hold and the next one
// are at least one script run apart, more than a microsecond); nothing is kept beyond the lock's
// life. A re-entry by the lock's owner joins the hold and gets its token, unless no record of ours
// describes the hold (a stock process took or renewed the lock under the same owner:
// docs/fencing.md); it then starts a new hold with a new token. Tokens stay below 2^53, exact as
// JavaScript numbers, until the year 2255.

// Client kinds in holder records.
const (
	ClientGo     = "go"     // a Go program using this package
	ClientBridge = "bridge" // a bridge client (the Node package), through cmd/bridge
	ClientCLI    = "cli"    // locktui acquire / run
)

// Holder names the process that takes a lock, in the lock's holder record. In Options, empty
// fields take the defaults below; a per-call Holder (AcquireOptions, LeaseOptions) that is not
// the zero value is written as it is, only an empty Client taking Options.Holder's.
type Holder struct {
	// Host is the host name. Default os.Hostname().
	Host string
	// PID is the process id. Default os.Getpid().
	PID int
	// Program is the program or service name. Default the executable's file name.
	Program string
	// Client is the kind of client: ClientGo (the default), ClientBridge or ClientCLI.
	Client string
}

// forCall is the Holder a call writes: call as it is (Client defaulting to h's), or h when
// call is the zero value.
func (h Holder) forCall(call Holder) Holder {
	if call == (Holder{}) {
		return h
	}
	if call.Client == "" {
		call.Client = h.Client
	}
	return call
}

// withDefaults fills h's empty fields from def.
func (h Holder) withDefaults(def Holder) Holder {
	if h.Host == "" {
		h.Host = def.Host
	}
	if h.PID == 0 {
		h.PID = def.PID
	}
	if h.Program == "" {
		h.Program = def.Program
	}
	if h.Client == "" {
		h.Client = def.Client
	}
	return h
}

// thisProcess is the Holder of the running process.
func thisProcess() Holder {
	h := Holder{PID: os.Getpid(), Client: ClientGo}
	h.Host, _ = os.Hostname()
	if exe, err := os.Executable(); err == nil {
		h.Program = filepath.Base(exe)
	} else if len(os.Args) > 0 {
		h.Program = filepath.Base(os.Args[0])
	}
	return h
}

// arg is h as acquire.lua's ARGV[7] takes it: host, pid, program and client kind joined by NUL
// bytes, in the order of the holder record's fields (internal/lockwire/record.go); a NUL inside
// a field is written as U+FFFD, so that the record's fields stay apart.
func (h Holder) arg() string {
	clean := func(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
	return strings.Join([]string{clean(h.Host), strconv.Itoa(h.PID), clean(h.Program), clean(h.Client)}, "\x00")
}

// String names the process: "medusa-worker (pid 4242 on web-1, bridge client)", with "?" for
// what is not known (a bridge client that did not say); program, host and client kind quoted as
// operator.Printable quotes them, since a record's fields are whatever was written to Redis.
func (h Holder) String() string {
	program, pid := lockwire.Printable(h.Program), "pid ?"
	if h.Program == "" {
		program = "?"
	}
	if h.PID > 0 {
		pid = "pid " + strconv.Itoa(h.PID)
	}
	return fmt.Sprintf("%s (%s on %s, %s client)", program, pid, lockwire.Printable(h.Host), lockwire.Printable(h.Client))
}

// FencingTokenOf is the one token that stands for a grant of several keys, each with its own
// token in tokens: the token of the first key in sorted order (0 for none). Lease.FencingToken
// and the bridge's fencing_token follow it.
func FencingTokenOf(tokens map[string]int64) int64 {
	if len(tokens) == 0 {
		return 0
	}
	return tokens[slices.Min(slices.Collect(maps.Keys(tokens)))]
}

// fenceCtxKey carries an Execute job's lease in its context.
type fenceCtxKey struct{}

// FencingToken returns the fencing token of the lease an Execute job runs under, read from the
// job's ctx (see Lease.FencingToken); ok is false outside an Execute job.
func FencingToken(ctx context.Context) (token int64, ok bool) {
	l, ok := ctx.Value(fenceCtxKey{}).(*Lease)
	if !ok {
		return 0, false
	}
	return l.FencingToken(), true
}

// FencingTokens returns the token of every key of the lease an Execute job runs under, read
// from the job's ctx (see Lease.FencingTokens); nil outside an Execute job.
func FencingTokens(ctx context.Context) map[string]int64 {
	if l, ok := ctx.Value(fenceCtxKey{}).(*Lease); ok {
		return l.FencingTokens()
	}
	return nil
}
