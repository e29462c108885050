package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// A subscription to lock events refused at start (here by an ACL) is made once Redis allows it,
// without restarting the console.
func TestIntegrationEventsResubscribeAfterAFailedStart(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "console", "on", ">pw", "~*", "resetchannels", "+@all").Err())
	require.NoError(t, admin.Set(ctx, "medusa_lock:cart:9", "holder", time.Minute).Err())
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "console", Password: "pw"})
	t.Cleanup(func() { _ = client.Close() })

	c := startConsole(t, Config{Client: client, URL: srv.URL})
	c.await("cart:9", "lock events unavailable", "· no events")
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "console", "allchannels").Err())
	c.await("lock events subscribed", "· events")

	c.press("3")
	ev, err := json.Marshal(events.Event{V: events.Version, Kind: provider.EventWaiting, Key: "cart:9",
		Owner: "waiter-1", TS: time.Now().UnixMilli(), Source: events.SourceGo})
	require.NoError(t, err)
	require.NoError(t, admin.Publish(ctx, events.ChannelFor("medusa_lock:"), ev).Err())
	c.await("1 cart:9", "holder")
	c.quit()
}

// In read-only mode the hook that refuses writes reaches the clients of a Cluster's nodes too
// (ForEachMaster hands them out: the refresh, a release of all locks), both the nodes the
// client knew before the console started and those it learns after.
func TestIntegrationReadOnlyGuardsClusterNodes(t *testing.T) {
	cluster := redistest.StartCluster(t, 2)
	addrs := cluster.Addrs
	ctx := t.Context()
	newClient := func() *redis.ClusterClient {
		cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	writer := cluster.Client(t)
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("medusa_lock:k%02d", i))
		require.NoError(t, writer.Set(ctx, keys[i], "o", time.Minute).Err())
	}

	used := newClient() // used before the console starts, as the CLI does: its nodes exist
	require.NoError(t, used.Ping(ctx).Err())
	fresh := newClient() // its nodes are made while the console runs
	for name, cl := range map[string]*redis.ClusterClient{"used": used, "fresh": fresh} {
		c := startConsole(t, Config{Client: cl, URL: "redis://" + addrs[0] + "?cluster=1", ReadOnly: true, NoEvents: true})
		c.await(" RO ", "20 locks")
		c.quit()

		err := cl.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			for _, k := range keys { // a node deletes the keys of its slots (others: MOVED)
				if err := node.Del(ctx, k).Err(); !errors.Is(err, redisconn.ErrReadOnly) {
					return fmt.Errorf("DEL %s on a node's client: %v, want ErrReadOnly", k, err)
				}
			}
			return nil
		})
		require.NoError(t, err, "%s client", name)
		_, err = provider.New(cl, nil).ReleaseAll(ctx, "o")
		require.ErrorIs(t, err, redisconn.ErrReadOnly, "%s client: ReleaseAll walks the nodes' clients", name)
		for _, k := range keys {
			require.Equal(t, int64(1), writer.Exists(ctx, k).Val(), "%s client: %s is still there", name, k)
		}
	}
}
