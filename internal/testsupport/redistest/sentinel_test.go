package redistest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
)

// The deployment serves its URL the way an operator's does; the failovers are exercised by
// e2e.TestSentinelFailover.
func TestStartSentinelServesItsURL(t *testing.T) {
	s := redistest.StartSentinel(t)
	require.Len(t, s.Nodes, 2)
	assert.Same(t, s.Nodes[0], s.Master(t), "the first node starts as the master")
	assert.Regexp(t, `^redis://127\.0\.0\.1:\d+/0\?master_name=mymaster&addr=127\.0\.0\.1:\d+&addr=127\.0\.0\.1:\d+$`, s.URL)

	c, err := redisconn.Open(s.URL, redisconn.TLSFiles{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Set(t.Context(), "k", "v", 0).Err())
	got, err := s.Nodes[0].Client().Get(t.Context(), "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", got, "the Sentinel URL leads to the master")
}
