package cli

import (
	"os"
	"strconv"
	"strings"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// Environment variables run gives its command (see docs/fencing.md).
const (
	// EnvFencingToken is the lease's fencing token (provider.Lease.FencingToken).
	EnvFencingToken = "LOCKTUI_FENCING_TOKEN"
	// EnvFencingTokens is every key's token, one a line, in the order of EnvLockKeys.
	EnvFencingTokens = "LOCKTUI_FENCING_TOKENS"
	// EnvLockKeys is the leased keys (without namespace), sorted, one a line.
	EnvLockKeys = "LOCKTUI_LOCK_KEYS"
)

// leaseEnv is the environment of run's command: run's own, and the lease's keys and tokens.
func leaseEnv(lease *provider.Lease) []string {
	keys := lease.Keys()
	tokens := lease.FencingTokens()
	each := make([]string, len(keys))
	for i, k := range keys {
		each[i] = strconv.FormatInt(tokens[k], 10)
	}
	return append(os.Environ(),
		EnvFencingToken+"="+strconv.FormatInt(lease.FencingToken(), 10),
		EnvFencingTokens+"="+strings.Join(each, "\n"),
		EnvLockKeys+"="+strings.Join(keys, "\n"))
}

// holderJSON is a lock's holder record in list --json (see docs/fencing.md).
type holderJSON struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Program string `json:"program"`
	// Client is the kind of client that took the lock: go, bridge or cli.
	Client string `json:"client"`
	// AcquiredAtMs is when the hold began, Unix milliseconds in Redis server time.
	AcquiredAtMs int64 `json:"acquired_at_ms"`
	// FencingToken is the hold's token.
	FencingToken int64 `json:"fencing_token"`
}

// holderJSONOf is r in list --json: nil (JSON null) for a lock without a record.
func holderJSONOf(r *operator.Record) *holderJSON {
	if r == nil {
		return nil
	}
	return &holderJSON{Host: r.Host, PID: r.PID, Program: r.Program, Client: r.Client,
		AcquiredAtMs: r.AcquiredAt.UnixMilli(), FencingToken: r.FencingToken}
}
