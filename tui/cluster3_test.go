package tui

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// The console lists a three-master Cluster: the locks of every master with their holders (and
// a stock lock without record said so in words), the cursor on the top row once the first
// refresh is shown whichever master answered last, the owners grouped by process, and the
// detail view with the hold's fencing token.
func TestIntegrationListsAThreeMasterCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	addrs := cluster.Addrs
	ctx := t.Context()
	cl := cluster.Client(t)

	p := provider.New(cl, &provider.Options{Holder: provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker"}})
	var keys []string
	for i := range 15 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	tokens, err := p.AcquireTokens(ctx, keys, provider.AcquireOptions{Owner: "o", Expire: time.Hour})
	require.NoError(t, err)
	require.NoError(t, cl.Set(ctx, "medusa_lock:stock:1", "svc", time.Hour).Err()) // as stock Medusa does
	require.NoError(t, cl.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		if n := node.DBSize(ctx).Val(); n == 0 {
			return fmt.Errorf("master %s holds no key", node.Options().Addr)
		}
		return nil
	}), "the locks are spread over every master")

	c := startConsole(t, Config{Client: cl, URL: "redis://" + addrs[0] + "?cluster=1", ReadOnly: true, NoEvents: true})
	c.await("16 locks", "medusa-worker/4242", "no record", "key k00 ")
	c.awaitMatch(`stock:1 +svc +no record `)

	c.press("2")
	c.press("t")
	c.awaitMatch(`15 medusa-worker/4242@web-1 +go +1 `)
	c.awaitMatch(`1 no holder record `)

	c.press("1")
	c.await("key k00 ")
	c.press("\r")
	c.await("HOLDER     medusa-worker (pid 4242 on web-1, go client)", "FENCE      "+strconv.FormatInt(tokens["k00"], 10))
	c.quit()
}
