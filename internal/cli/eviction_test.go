package cli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
)

// A command that takes locks says when the server's maxmemory-policy can evict them.
func TestCommandsThatTakeLocksWarnOfAnEvictingPolicy(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--maxmemory-policy", "volatile-ttl"}})
	warning := "locktui: warning: " + redisconn.EvictionWarning("volatile-ttl") + "\n"
	r := run(t, "acquire", "k", "--owner", "o", "--expire", "1m", "--redis", srv.URL)
	requireCode(t, r, 0)
	require.Equal(t, warning, r.stderr)
	r = run(t, "run", "k2", "--redis", srv.URL, "--", "true")
	requireCode(t, r, 0)
	require.Equal(t, warning, r.stderr)
	r = run(t, "list", "--redis", srv.URL)
	requireCode(t, r, 0)
	require.Empty(t, r.stderr, "a command that only reads says nothing")
}
