package provider_test

import (
	"bytes"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// proxy is a TCP proxy in front of a redis-server that can lose the reply to one request on the
// socket, the way a broken connection loses it: the request reaches Redis and runs, then the
// connection is cut before any byte of the reply reaches the client. go-redis sees a failed read
// and, as it does after any such failure, may retry the request on a new connection: a hook
// sits above that retry layer, so this needs a real socket.
type proxy struct {
	Addr   string
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	needle []byte // a request containing it has its reply lost; nil: forward everything
	hold   func() // runs with the lost reply in hand, before the connection is cut
	lost   int    // replies lost so far
}

// startProxy listens on a free loopback port and forwards every connection to target. It is
// closed, with every connection it carries, when the test ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// loseReplyTo makes the proxy lose the reply to the next request that contains needle (once).
// hold, if not nil, runs after Redis replied and before the connection is cut; it may block.
func (p *proxy) loseReplyTo(needle string, hold func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.needle, p.hold = []byte(needle), hold
}

func (p *proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Go(func() { p.pipe(client, server) })
	}
}

// track registers a connection pair, or closes it when the proxy is closing.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe forwards one connection both ways until either side closes or a reply is lost.
func (p *proxy) pipe(client, server net.Conn) {
	cut := func() {
		_ = client.Close()
		_ = server.Close()
	}
	defer cut()
	var (
		mu   sync.Mutex
		lose func() // set when the request just forwarded must have its reply lost
	)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cut()
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if hold, ok := p.claim(buf[:n]); ok {
					mu.Lock()
					lose = hold
					mu.Unlock()
				}
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			mu.Lock()
			hold := lose
			mu.Unlock()
			if hold != nil {
				hold()
				break // cut: the reply never reaches the client
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	cut()
	wg.Wait()
}

// claim reports whether the request chunk req is the one whose reply must be lost, disarming
// the proxy if so, and returns the hold to run.
func (p *proxy) claim(req []byte) (func(), bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.needle == nil || !bytes.Contains(req, p.needle) {
		return nil, false
	}
	hold := p.hold
	if hold == nil {
		hold = func() {}
	}
	p.needle, p.hold = nil, nil
	p.lost++
	return hold, true
}

// lostReplies returns how many replies the proxy has lost.
func (p *proxy) lostReplies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
