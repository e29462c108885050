package faultproxy_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var directions = []faultproxy.Direction{faultproxy.Upstream, faultproxy.Downstream}

func TestPassesBytesBothWaysAndHalfCloses(t *testing.T) {
	b := startBackend(t, true)
	p := faultproxy.StartT(t, b.addr)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, p.Addr())
	c := dial(t, p)
	roundTrip(t, c, "hello")
	require.Equal(t, 1, p.Conns())

	big := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB, many chunks
	go func() { _, _ = c.Write(big) }()
	got := make([]byte, len(big))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitFor)))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, got), "4 MiB came back changed")

	// The client's FIN reaches the echo server, which closes; its FIN comes back.
	send(t, c, "bye")
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitFor)))
	rest, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "bye", string(rest))
	eventually(t, func() bool { return p.Conns() == 0 }, "the pair is closed on both sides")
}

func TestDelayDelaysEveryChunkInOrderWithoutSerializing(t *testing.T) {
	const (
		d = 100 * time.Millisecond
		n = 10
	)
	for _, dir := range directions {
		t.Run(dir.String(), func(t *testing.T) {
			b := startBackend(t, true)
			p := faultproxy.StartT(t, b.addr)
			c := dial(t, p)
			roundTrip(t, c, "warm") // an open connection: the delay applies to it too
			p.Delay(dir, d)

			sent := make(chan time.Time, n)
			go func() { // one message every 10 ms: each is a chunk of its own
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for i := range n {
					sent <- time.Now()
					if _, err := fmt.Fprintf(c, "m%03d", i); err != nil {
						return
					}
					<-tick.C
				}
			}()
			var first, last time.Time
			for i := range n {
				expect(t, c, fmt.Sprintf("m%03d", i))
				arrived := time.Now()
				at := <-sent
				require.GreaterOrEqual(t, arrived.Sub(at), d, "message %d arrived early", i)
				if i == 0 {
					first = at
				}
				last = arrived
			}
			// Serialized, one delay after another, n messages would take n*d.
			require.Less(t, last.Sub(first), n*d/2, "delays must overlap")

			c2 := dial(t, p) // a new connection is delayed as well
			start := time.Now()
			roundTrip(t, c2, "new")
			require.GreaterOrEqual(t, time.Since(start), d)
		})
	}
}

func TestRestoreKeepsDelayedBytesInOrder(t *testing.T) {
	const d = 500 * time.Millisecond
	b := startBackend(t, true)
	p := faultproxy.StartT(t, b.addr)
	c := dial(t, p)
	roundTrip(t, c, "warm")

	p.Delay(faultproxy.Upstream, d)
	start := time.Now()
	send(t, c, "a")
	eventually(t, func() bool { return faultproxy.Queued(p) == 1 }, `the proxy holds "a"`)
	p.Restore(faultproxy.Upstream)
	send(t, c, "b") // due at once, but behind "a"
	expect(t, c, "ab")
	require.GreaterOrEqual(t, time.Since(start), d)

	start = time.Now()
	roundTrip(t, c, "c")
	require.Less(t, time.Since(start), d, "restored: no delay")
}

func TestBlackholeDropsBytesAndClosesNothing(t *testing.T) {
	for _, dir := range directions {
		t.Run(dir.String(), func(t *testing.T) {
			b := startBackend(t, true)
			p := faultproxy.StartT(t, b.addr)
			c := dial(t, p)
			roundTrip(t, c, "hi")

			p.Blackhole(dir)
			send(t, c, "lost")
			expectSilent(t, c)
			c2 := dial(t, p) // new connections are blackholed too
			send(t, c2, "lost2")
			expectSilent(t, c2)
			require.Equal(t, 2, p.Conns(), "nothing closed")

			p.Restore(dir)
			roundTrip(t, c, "back") // "lost" is gone for good
			roundTrip(t, c2, "back2")
			require.Equal(t, 2, p.Conns())
		})
	}
}

func TestBlackholeDropsBytesAlreadyDelayed(t *testing.T) {
	b := startBackend(t, true)
	p := faultproxy.StartT(t, b.addr)
	c := dial(t, p)
	roundTrip(t, c, "warm")

	p.Delay(faultproxy.Upstream, silence/2)
	send(t, c, "x")
	eventually(t, func() bool { return faultproxy.Queued(p) == 1 }, `the proxy holds "x"`)
	p.Blackhole(faultproxy.Upstream)
	expectSilent(t, c) // longer than the delay
	p.Restore(faultproxy.Upstream)
	roundTrip(t, c, "y")
}

// Cut ends one side of every connection: that side sees the end of the stream, while the
// other side's writes vanish and its reads block (no FIN) until it closes too. New connections
// work.
func TestCutEndsOneSideOnly(t *testing.T) {
	for _, dir := range []faultproxy.Direction{faultproxy.Upstream, faultproxy.Downstream} {
		t.Run(dir.String(), func(t *testing.T) {
			b := startBackend(t, false)
			p := faultproxy.StartT(t, b.addr)
			c, s := connected(t, p, b)
			send(t, s, "yo")
			expect(t, c, "yo")
			ended, open := s, c // Upstream: the server's side ends
			if dir == faultproxy.Downstream {
				ended, open = c, s
			}

			p.Cut(dir)
			expectClosed(t, ended) // it sees the end of the stream
			send(t, open, "more")  // the other side's writes vanish
			expectSilent(t, open)  // no FIN: its reads block
			require.Equal(t, 1, p.Conns(), "the other side is still open")

			c2, _ := connected(t, p, b) // new connections work
			require.NoError(t, open.Close())
			eventually(t, func() bool { return p.Conns() == 1 }, "the cut pair ends when its other side closes")
			require.NoError(t, c2.Close())
		})
	}
}

func TestCutDropsBytesInFlight(t *testing.T) {
	b := startBackend(t, false)
	p := faultproxy.StartT(t, b.addr)
	c, s := connected(t, p, b)

	p.Delay(faultproxy.Downstream, silence/2)
	send(t, s, "queued")
	eventually(t, func() bool { return faultproxy.Queued(p) == 6 }, "waiting in the proxy")
	p.Cut(faultproxy.Upstream)
	expectSilent(t, c) // longer than the delay: what was queued for the client is gone
}

func TestCutAllClosesBothSides(t *testing.T) {
	b := startBackend(t, false)
	p := faultproxy.StartT(t, b.addr)
	c, s := connected(t, p, b)
	c2, s2 := connected(t, p, b)

	p.CutAll()
	require.Zero(t, p.Conns())
	for _, conn := range []net.Conn{c, s, c2, s2} {
		expectClosed(t, conn)
	}

	c3 := dial(t, p)
	send(t, c3, "again")
	expect(t, b.next(t), "again")
}

func TestRefuseClosesNewConnections(t *testing.T) {
	b := startBackend(t, true)
	p := faultproxy.StartT(t, b.addr)
	open := dial(t, p)
	roundTrip(t, open, "before")

	p.Refuse(true)
	refused := dial(t, p)
	expectClosed(t, refused)
	roundTrip(t, open, "still") // open connections are not affected

	p.Refuse(false)
	roundTrip(t, dial(t, p), "after")
	require.EqualValues(t, 2, b.accepted.Load(), "the refused connection never reached the server")
}

func TestHoldNeverConnects(t *testing.T) {
	b := startBackend(t, true)
	p := faultproxy.StartT(t, b.addr)

	p.Hold(true)
	held := dial(t, p)
	eventually(t, func() bool { return p.Held() == 1 }, "the proxy holds the connection")
	send(t, held, "anyone?")
	expectSilent(t, held)
	require.Zero(t, p.Conns())
	require.Zero(t, b.accepted.Load(), "a held connection never reaches the server")

	p.Hold(false)
	expectClosed(t, held)
	require.Zero(t, p.Held())
	roundTrip(t, dial(t, p), "after")
}

func TestLoseReplyToWithholdsOneReplyThenCuts(t *testing.T) {
	b := startBackend(t, true)
	p := faultproxy.StartT(t, b.addr)
	c := dial(t, p)
	roundTrip(t, c, "warm")

	type seen struct{ conns, lost int }
	held := make(chan seen, 2) // hold runs on a proxy goroutine
	p.LoseReplyTo([]byte("PING"), func() { held <- seen{p.Conns(), p.LostReplies()} })
	roundTrip(t, c, "not this one")
	send(t, c, "*1\r\n$4\r\nPING\r\n")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitFor)))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "cut: the client reads the end of the stream")
	require.Empty(t, got, "no byte of the reply reaches the client")
	require.Len(t, held, 1, "hold ran once")
	require.Equal(t, seen{conns: 1, lost: 1}, <-held, "hold runs after the count, before the cut")
	require.Equal(t, 1, p.LostReplies())
	// The client may read the end of its side before the proxy has dropped the link.
	eventually(t, func() bool { return p.Conns() == 0 }, "both sides are cut")

	c2 := dial(t, p) // once only
	roundTrip(t, c2, "PING")
	require.Equal(t, 1, p.LostReplies())

	p.LoseReplyTo([]byte("PING"), nil) // nil hold
	send(t, c2, "PING")
	expectClosed(t, c2)
	require.Equal(t, 2, p.LostReplies())
}

func TestQueueLimitStopsReadingTheSender(t *testing.T) {
	b := startBackend(t, false) // never reads
	p := faultproxy.StartT(t, b.addr)
	faultproxy.SetQueueLimit(p, 1<<10)
	c := dial(t, p)
	s := b.next(t)
	require.NoError(t, s.(*net.TCPConn).SetReadBuffer(64<<10))

	require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Second)))
	n, err := c.Write(make([]byte, 64<<20))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the writer must block")
	require.Less(t, n, 32<<20, "the proxy buffered what it should not")
}

func TestCloseEndsEveryConnectionAndGoroutine(t *testing.T) {
	target := redistest.Silent(t) // accepts and never reads nor answers
	p, err := faultproxy.Start(target)
	require.NoError(t, err)

	plain := dial(t, p)
	send(t, plain, "x")
	blocked := dial(t, p) // the proxy's write to the silent server blocks
	go func() { _, _ = blocked.Write(make([]byte, 32<<20)) }()
	p.Delay(faultproxy.Upstream, time.Hour)
	delayed := dial(t, p)
	send(t, delayed, "later")
	eventually(t, func() bool { return p.Conns() == 3 }, "three pairs")
	p.Cut(faultproxy.Downstream)
	halfCut := dial(t, p)
	eventually(t, func() bool { return p.Conns() == 4 }, "four pairs")
	p.Cut(faultproxy.Upstream) // halfCut: client side open; the others: already cut
	p.Hold(true)
	held := dial(t, p)
	eventually(t, func() bool { return p.Held() == 1 }, "one held")
	require.Positive(t, proxyGoroutines(), "the count sees the proxy's goroutines (it names their package)")

	p.Close()
	require.Zero(t, proxyGoroutines(), "a goroutine outlived Close")
	require.Zero(t, p.Conns())
	require.Zero(t, p.Held())
	for _, c := range []net.Conn{halfCut, held} {
		expectClosed(t, c)
	}
	p.Close() // twice is fine
	_, err = net.Dial("tcp", p.Addr())
	require.Error(t, err, "no longer listening")
}

func TestInvalidDirectionPanics(t *testing.T) {
	p := faultproxy.StartT(t, "127.0.0.1:1")
	require.PanicsWithValue(t, "faultproxy: invalid Direction(7)", func() { p.Blackhole(7) })
}
