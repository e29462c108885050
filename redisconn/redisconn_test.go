package redisconn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
)

var clientKinds = []struct {
	url  string
	want string
}{
	{"redis://localhost:6379", "standalone"},
	{"redis://user:secret@localhost:6379/3", "standalone"},
	{"rediss://localhost:6380", "standalone"},
	{"redis://s1:26379/0?master_name=mymaster&addr=s2:26379", "sentinel"},
	{"redis://n1:7000?cluster=true&addr=n2:7001", "cluster"},
}

func TestOpenPicksTheClientKind(t *testing.T) {
	for _, c := range clientKinds {
		t.Run(c.url, func(t *testing.T) {
			client, err := redisconn.Open(c.url, redisconn.TLSFiles{})
			require.NoError(t, err)
			defer client.Close()
			var got string
			switch cl := client.(type) {
			case *redis.ClusterClient:
				got = "cluster"
			case *redis.Client:
				got = "standalone"
				// go-redis marks the *redis.Client of a Sentinel failover by this address.
				if cl.Options().Addr == "FailoverClient" {
					got = "sentinel"
				}
			}
			require.Equal(t, c.want, got)
		})
	}
}

func TestOpenStandaloneOptions(t *testing.T) {
	client, err := redisconn.Open("redis://user:secret@localhost:6390/3", redisconn.TLSFiles{})
	require.NoError(t, err)
	defer client.Close()
	opts := client.(*redis.Client).Options()
	require.Equal(t, "localhost:6390", opts.Addr)
	require.Equal(t, 3, opts.DB)
	require.Equal(t, "user", opts.Username)
	require.Equal(t, "secret", opts.Password)
	require.Nil(t, opts.TLSConfig)
	require.True(t, opts.ContextTimeoutEnabled, "a cancelled context must cut Redis I/O under way")

	tlsClient, err := redisconn.Open("rediss://localhost:6380", redisconn.TLSFiles{})
	require.NoError(t, err)
	defer tlsClient.Close()
	require.NotNil(t, tlsClient.(*redis.Client).Options().TLSConfig)
}

var badURLs = []string{
	"localhost:6379",
	"http://localhost:6379",
	"redis://",
	"redis://localhost:6379/notadb",
	"redis://localhost:6379?no_such_option=1",
	"redis://%zz",
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range badURLs {
		t.Run(u, func(t *testing.T) {
			_, err := redisconn.Open(u, redisconn.TLSFiles{})
			require.Error(t, err)
			require.True(t, errors.Is(err, redisconn.ErrBadURL), "Open(%q) = %v, want ErrBadURL", u, err)
		})
	}
}

func TestBadURLErrorHidesThePassword(t *testing.T) {
	_, err := redisconn.Open("redis://user:hunter2@localhost:6379/x", redisconn.TLSFiles{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestMissingTLSFilesAreReported(t *testing.T) {
	_, err := redisconn.Open("rediss://localhost:6380", redisconn.TLSFiles{CA: "/nonexistent/ca.pem"})
	require.ErrorContains(t, err, "TLS CA")
}

func TestDescribeRedactsPasswords(t *testing.T) {
	require.Equal(t, "redis://user:xxxxx@host:6379/1", redisconn.Describe("redis://user:hunter2@host:6379/1"))
	require.Equal(t, "redis://host:6379", redisconn.Describe("redis://host:6379"))
}

func TestOpenConnectsToARealServer(t *testing.T) {
	srv := redistest.Start(t)
	client, err := redisconn.Open(srv.URL+"/2", redisconn.TLSFiles{})
	require.NoError(t, err)
	defer client.Close()
	require.NoError(t, client.Set(context.Background(), "k", "v", 0).Err())
	db2 := redis.NewClient(&redis.Options{Addr: srv.Addr, DB: 2})
	defer db2.Close()
	require.Equal(t, "v", db2.Get(context.Background(), "k").Val())
	require.Zero(t, srv.Client(t).Exists(context.Background(), "k").Val(), "db 0 must not have the key")
}
