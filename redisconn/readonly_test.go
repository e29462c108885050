package redisconn_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/redisconn"
)

var readCommandTests = []struct {
	args []any
	want bool
}{
	{[]any{"get", "k"}, true},
	{[]any{"SCAN", 0, "match", "ns:*"}, true},
	{[]any{"config", "get", "maxmemory-policy"}, true},
	{[]any{"config", "set", "maxmemory-policy", "noeviction"}, false},
	{[]any{"cluster", "slots"}, true},
	{[]any{"cluster", "failover"}, false},
	{[]any{"client", "setinfo", "lib-name", "x"}, true},
	{[]any{"client", "kill", "id", 1}, false},
	{[]any{"set", "k", "v"}, false},
	{[]any{"del", "k"}, false},
	{[]any{"evalsha", "abc", 0}, false},
	{[]any{"publish", "ch", "m"}, false},
}

func TestIsReadCommand(t *testing.T) {
	for _, tt := range readCommandTests {
		cmd := redis.NewCmd(context.Background(), tt.args...)
		if got := redisconn.IsReadCommand(cmd); got != tt.want {
			t.Errorf("IsReadCommand(%v) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// A guarded client refuses a write before it dials, and lets a read through to the dial (which
// fails: there is no server).
func TestGuardReadOnlyRefusesWritesBeforeSending(t *testing.T) {
	t.Cleanup(redisconn.LogTo(nil)) // go-redis logs the failed dial
	var dials atomic.Int32
	client := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("no server here")
		},
	})
	t.Cleanup(func() { client.Close() })
	redisconn.GuardReadOnly(t.Context(), client)

	if err := client.Set(t.Context(), "k", "v", 0).Err(); !errors.Is(err, redisconn.ErrReadOnly) {
		t.Errorf("SET = %v, want ErrReadOnly", err)
	}
	cmds, err := client.Pipelined(t.Context(), func(p redis.Pipeliner) error {
		p.Get(t.Context(), "k")
		p.Del(t.Context(), "k")
		return nil
	})
	if !errors.Is(err, redisconn.ErrReadOnly) {
		t.Errorf("pipeline of GET and DEL = %v, want ErrReadOnly", err)
	}
	for _, c := range cmds {
		if !errors.Is(c.Err(), redisconn.ErrReadOnly) {
			t.Errorf("%s in a refused pipeline: %v, want ErrReadOnly", c.Name(), c.Err())
		}
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("refused commands dialled %d times, want 0", n)
	}
	if err := client.Get(t.Context(), "k").Err(); err == nil || errors.Is(err, redisconn.ErrReadOnly) {
		t.Errorf("GET = %v, want the dial's error", err)
	}
	if n := dials.Load(); n == 0 {
		t.Error("GET did not dial, want a read sent")
	}
}
