package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction is one way of a proxied connection.
type Direction int

const (
	// Upstream is the bytes the client sends to the server.
	Upstream Direction = iota
	// Downstream is the bytes the server sends to the client.
	Downstream
)

// String returns "upstream" or "downstream".
func (d Direction) String() string {
	switch d {
	case Upstream:
		return "upstream"
	case Downstream:
		return "downstream"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// check panics on a Direction that is neither Upstream nor Downstream: a bug in the test.
func (d Direction) check() {
	if d != Upstream && d != Downstream {
		panic("faultproxy: invalid " + d.String())
	}
}

// defaultQueueLimit is how many bytes one direction of a link buffers before the proxy stops
// reading its sender.
const defaultQueueLimit = 64 << 20

// mode is what one direction does with the bytes it reads.
type mode struct {
	blackhole bool          // discard them
	delay     time.Duration // deliver them this much later
}

// Proxy is a fault-injecting TCP proxy in front of one target address. Its methods are safe
// for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	ctx    context.Context // cancelled by Close: ends dials in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started

	mu         sync.Mutex
	closed     bool
	modes      [2]mode // by Direction
	queueLimit int     // bytes buffered per direction before reading stops
	links      map[*link]struct{}
	held       map[net.Conn]struct{} // accepted under Hold, never connected
	refuse     bool
	hold       bool
	needle     []byte // the next request containing it has its reply lost; nil: none
	onLost     func() // runs with that reply in hand, before the cut
	lost       int    // replies lost so far
}

// Start listens on a free port of 127.0.0.1 and forwards every connection it accepts to target
// (host:port). Close stops it.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln:         ln,
		target:     target,
		ctx:        ctx,
		cancel:     cancel,
		queueLimit: defaultQueueLimit,
		links:      map[*link]struct{}{},
		held:       map[net.Conn]struct{}{},
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the host:port clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening, closes every connection (both sides) and returns once every goroutine
// the proxy started has ended. It may be called more than once. A LoseReplyTo hold that never
// returns keeps Close waiting.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	links, held := p.snapshot(), p.held
	p.held = map[net.Conn]struct{}{}
	p.mu.Unlock()

	p.cancel()
	_ = p.ln.Close()
	for c := range held {
		_ = c.Close()
	}
	for _, l := range links {
		l.cut(clientSide, serverSide)
	}
	p.wg.Wait()
}

// Delay makes every chunk in direction dir arrive d after the proxy read it, in order; d <= 0
// is Restore. It replaces Blackhole. Chunks already queued keep the time they were given.
func (p *Proxy) Delay(dir Direction, d time.Duration) {
	dir.check()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modes[dir] = mode{delay: max(d, 0)}
}

// Blackhole makes direction dir discard every byte from now on, including bytes queued by
// Delay that are not delivered yet; no socket is closed. It replaces Delay.
func (p *Proxy) Blackhole(dir Direction) {
	dir.check()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modes[dir] = mode{blackhole: true}
}

// Restore makes direction dir pass bytes through again. Bytes discarded while it was
// blackholed are gone; bytes queued by Delay still arrive in order, at the time they were given.
func (p *Proxy) Restore(dir Direction) { p.Delay(dir, 0) }

// Cut closes one side of every open connection, as a broken link that only one peer notices:
// Cut(Upstream) closes the server's socket (the server sees the end of the stream) and keeps
// the client's open and silent (no FIN; its reads block, its writes are discarded);
// Cut(Downstream) is the mirror image. Bytes in flight are dropped. Connections made after Cut
// are not affected.
func (p *Proxy) Cut(dir Direction) {
	dir.check()
	for _, l := range p.openLinks() {
		l.cut(dst(dir))
	}
}

// CutAll closes both sides of every open connection.
func (p *Proxy) CutAll() {
	for _, l := range p.openLinks() {
		l.cut(clientSide, serverSide)
	}
}

// Refuse, while on, makes the proxy close every new connection as soon as it accepts it: a
// server that is down. Open connections are not affected.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Hold, while on, makes the proxy accept new connections and never connect them to the target
// (a hung server): nothing is read from them or written to them. Hold(false) closes them; Close
// does too. Refuse takes precedence.
func (p *Proxy) Hold(on bool) {
	p.mu.Lock()
	p.hold = on
	var held map[net.Conn]struct{}
	if !on {
		held, p.held = p.held, map[net.Conn]struct{}{}
	}
	p.mu.Unlock()
	for c := range held {
		_ = c.Close()
	}
}

// LoseReplyTo makes the proxy lose the reply to the next request that contains needle, once,
// the way a broken connection loses it: the request is forwarded to the server (which runs it),
// then, when the first bytes of the server's reply arrive, hold runs (it may be nil; it may
// block, and Close waits for it), then the whole connection is cut, both sides, before any byte
// of the reply reaches the client. The needle must be within one chunk as read from the client
// (a request written with one write normally is). The reply is told apart from earlier replies
// only by arriving after the request was forwarded, so it is exact for a client that waits for
// each reply before the next request, as go-redis does on one connection; a pipeline is one
// request. A later call replaces a request not yet seen. hold runs on a goroutine of the proxy.
func (p *Proxy) LoseReplyTo(needle []byte, hold func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.needle, p.onLost = bytes.Clone(needle), hold
	if p.onLost == nil {
		p.onLost = func() {}
	}
}

// LostReplies returns how many replies LoseReplyTo has withheld so far. A reply is counted when
// its first bytes arrive (before hold runs); a connection that ends before its server replies
// loses no reply, and the needle is used up all the same.
func (p *Proxy) LostReplies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Conns returns how many connection pairs are open: connected to the target, and not yet closed
// on both sides. A pair cut on one side counts until its other side closes too.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Held returns how many connections Hold keeps waiting, including any whose client has gone
// away since (the proxy does not read them, so it does not notice).
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		switch {
		case p.closed, p.refuse:
			_ = c.Close()
		case p.hold:
			p.held[c] = struct{}{}
		default:
			p.wg.Go(func() { p.connect(c) })
		}
		p.mu.Unlock()
	}
}

// connect dials the target for client and starts forwarding.
func (p *Proxy) connect(client net.Conn) {
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	l := newLink(p, client, server)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.links[l] = struct{}{}
	for _, dir := range []Direction{Upstream, Downstream} {
		p.wg.Go(func() { l.read(dir) })
		p.wg.Go(func() { l.write(dir) })
	}
}

// settings returns the mode of direction dir and the queue limit.
func (p *Proxy) settings(dir Direction) (mode, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.modes[dir], p.queueLimit
}

// claim reports whether req is the request whose reply must be lost, disarming LoseReplyTo if
// so, and returns the hold to run.
func (p *Proxy) claim(req []byte) (func(), bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.needle == nil || !bytes.Contains(req, p.needle) {
		return nil, false
	}
	hold := p.onLost
	p.needle, p.onLost = nil, nil
	return hold, true
}

// countLost records a withheld reply.
func (p *Proxy) countLost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lost++
}

// openLinks returns the open links.
func (p *Proxy) openLinks() []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshot()
}

// snapshot returns the open links; p.mu must be held.
func (p *Proxy) snapshot() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

// remove forgets a link closed on both sides.
func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}
