package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// peerExecs opens a client on a fresh server and returns each peer's executor on it, by name in
// report order, with the namespace "ns:".
func peerExecs(t *testing.T) (*redistest.Server, []namedExec) {
	t.Helper()
	srv := redistest.Start(t)
	c, err := redisconn.Open(srv.URL, redisconn.TLSFiles{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var out []namedExec
	for _, im := range Peers() {
		out = append(out, namedExec{im.Name(), im.(PeerImpl).New(c, "ns:")})
	}
	return srv, out
}

type namedExec struct {
	name string
	Executor
}

// Each peer takes the key under its namespace for the job and leaves nothing behind.
func TestPeersHoldTheKeyForTheJobAndReleaseIt(t *testing.T) {
	srv, execs := peerExecs(t)
	c := srv.Client(t)
	for _, e := range execs {
		name := e.name
		t.Run(name, func(t *testing.T) {
			key := name + ":free"
			runs := 0
			err := e.Execute(t.Context(), []string{key}, func(ctx context.Context) error {
				runs++
				if n, err := c.Exists(ctx, "ns:"+key).Result(); err != nil || n != 1 {
					t.Errorf("inside the job: EXISTS ns:%s = %d, %v, want 1", key, n, err)
				}
				return nil
			}, provider.ExecuteOptions{Timeout: time.Second, Expire: time.Minute})
			if err != nil || runs != 1 {
				t.Fatalf("Execute = %v, job ran %d times, want nil and once", err, runs)
			}
			if n, _ := c.Exists(t.Context(), "ns:"+key).Result(); n != 0 {
				t.Error("the key is still there after Execute returned")
			}
		})
	}
}

// A key another caller holds makes each peer give up after the timeout, as a timeout (counted as
// such by the worker loop), without running the job or touching the holder's key.
func TestPeersGiveUpAfterTheTimeout(t *testing.T) {
	srv, execs := peerExecs(t)
	c := srv.Client(t)
	const timeout = 150 * time.Millisecond
	for _, e := range execs {
		name := e.name
		t.Run(name, func(t *testing.T) {
			key := name + ":held"
			if err := c.Set(t.Context(), "ns:"+key, "someone else", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := e.Execute(t.Context(), []string{key}, func(context.Context) error {
				t.Error("the job ran on a key held by another caller")
				return nil
			}, provider.ExecuteOptions{Timeout: timeout, Expire: time.Minute})
			took := time.Since(start)
			if !errors.Is(err, errNotObtained) {
				t.Errorf("Execute = %v, want errNotObtained", err)
			}
			if took < timeout-time.Millisecond || took > timeout+2*time.Second {
				t.Errorf("gave up after %v, want about %v", took, timeout)
			}
			if v, _ := c.Get(t.Context(), "ns:"+key).Result(); v != "someone else" {
				t.Errorf("the holder's key reads %q after the timeout", v)
			}
		})
	}
}

// A run cancelled while a peer waits is not a timeout: the worker loop must stop, not count it.
func TestPeersReturnTheCancellationNotATimeout(t *testing.T) {
	srv, execs := peerExecs(t)
	c := srv.Client(t)
	for _, e := range execs {
		name := e.name
		t.Run(name, func(t *testing.T) {
			key := name + ":cancelled"
			if err := c.Set(t.Context(), "ns:"+key, "someone else", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			err := e.Execute(ctx, []string{key}, func(context.Context) error { return nil },
				provider.ExecuteOptions{Timeout: 5 * time.Second, Expire: time.Minute})
			if err == nil || errors.Is(err, errNotObtained) {
				t.Errorf("Execute on a cancelled run = %v, want an error other than errNotObtained", err)
			}
		})
	}
}

// A release that finds the key gone (here the job deleted it) fails the execute: the bench
// reports it as an error, never as a clean critical section.
func TestPeersReportAReleaseThatFoundTheKeyGone(t *testing.T) {
	srv, execs := peerExecs(t)
	c := srv.Client(t)
	for _, e := range execs {
		name := e.name
		t.Run(name, func(t *testing.T) {
			key := name + ":stolen"
			err := e.Execute(t.Context(), []string{key}, func(ctx context.Context) error {
				return c.Del(ctx, "ns:"+key).Err()
			}, provider.ExecuteOptions{Timeout: time.Second, Expire: time.Minute})
			if err == nil || errors.Is(err, errNotObtained) {
				t.Errorf("Execute = %v, want a release error", err)
			}
		})
	}
}
