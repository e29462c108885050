package cli

import (
	"os"
	"strconv"
	"strings"

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
