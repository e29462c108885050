package faultproxy_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/faultproxy"
)

// waitFor bounds every wait of a test for something that should happen at once.
const waitFor = 5 * time.Second

// silence is how long a test listens to a connection that must stay silent.
const silence = 200 * time.Millisecond

// backend is a TCP server on loopback for the proxy to forward to. An echo backend echoes what
// it reads and closes a connection at the end of its stream; a plain one hands every connection
// it accepts to the test (next). Everything is closed when the test ends.
type backend struct {
	addr     string
	accepted atomic.Int32
	conns    chan net.Conn
}

func startBackend(t *testing.T, echo bool) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &backend{addr: ln.Addr().String(), conns: make(chan net.Conn, 64)}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		open   []net.Conn
		closed bool
		done   = make(chan struct{})
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.accepted.Add(1)
			mu.Lock()
			if closed {
				mu.Unlock()
				_ = c.Close()
				return
			}
			open = append(open, c)
			mu.Unlock()
			if echo {
				wg.Go(func() {
					_, _ = io.Copy(c, c)
					_ = c.Close()
				})
				continue
			}
			select {
			case b.conns <- c:
			case <-done:
				return
			}
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closed = true
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		close(done)
		wg.Wait()
	})
	return b
}

// next returns the next connection a plain backend accepted.
func (b *backend) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-b.conns:
		return c
	case <-time.After(waitFor):
		t.Fatal("the backend accepted no connection")
		return nil
	}
}

// dial connects to the proxy; the connection is closed when the test ends.
func dial(t *testing.T, p *faultproxy.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// connected dials p, whose target is the plain backend b, and returns the two ends of the
// connection, the client's and the server's, once a first message ("hi") has passed.
func connected(t *testing.T, p *faultproxy.Proxy, b *backend) (client, server net.Conn) {
	t.Helper()
	client = dial(t, p)
	send(t, client, "hi")
	server = b.next(t)
	expect(t, server, "hi")
	return client, server
}

// send writes msg on c.
func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
}

// expect reads len(want) bytes from c and checks they are want.
func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitFor)))
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// roundTrip sends msg through an echo backend and checks it comes back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	send(t, c, msg)
	expect(t, c, msg)
}

// expectSilent checks that c receives nothing, and is not closed, for a while.
func expectSilent(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(silence)))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n, "bytes received on a silent connection")
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a silent connection must time out, not end")
}

// expectClosed checks that the peer of c closed it without sending anything more: a FIN, or a
// reset when the peer closed with bytes from c unread.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitFor)))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after close = %v, want EOF or a reset", err)
	}
}

// eventually waits for cond, which should become true at once.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, waitFor, time.Millisecond, msg)
}

// proxyGoroutines counts the goroutines running code of package faultproxy (not of its tests),
// at once, without retrying: a Close that returns before its goroutines end is caught.
func proxyGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if strings.Contains(string(g), "/internal/testsupport/faultproxy.") {
			count++
		}
	}
	return count
}
