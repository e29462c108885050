package bridge

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// HTTP deadlines and limits.
const (
	// readHeaderTimeout bounds how long a client may take to send its request headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes idle keep-alive HTTP connections (health checks, scrapes).
	idleTimeout = 60 * time.Second
	// maxHeaderBytes bounds the request headers.
	maxHeaderBytes = 64 << 10
	// readyTimeout bounds the PING of /readyz.
	readyTimeout = 2 * time.Second
	// handshakeTimeout bounds the WebSocket handshake.
	handshakeTimeout = 10 * time.Second
)

// Server is the bridge: an http.Handler for /ws, /healthz, /readyz and /metrics, and the set of
// live connections. Create it with New, serve it with Serve (or mount Handler), stop it with
// Shutdown.
type Server struct {
	cfg      Config
	log      *slog.Logger
	prov     *provider.Provider
	auth     *authenticator
	metrics  *metrics
	upgrader websocket.Upgrader
	mux      *http.ServeMux

	sessions *sessions

	// ctx is the parent of the requests that outlive their connection and of lease releases;
	// it ends when a shutdown is cut short.
	ctx      context.Context
	hardStop context.CancelFunc

	mu       sync.Mutex
	http     *http.Server // set by Serve
	conns    map[*conn]struct{}
	perToken map[string]int // open and upgrading connections by token secret
	open     int            // open and upgrading connections
	nextConn uint64
	stopping bool
	wg       sync.WaitGroup // one per live connection
}

// New validates cfg and returns a Server with its own provider (one per bridge: it is safe for
// concurrent use) and its own Prometheus registry.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, ErrNoClient
	}
	cfg = cfg.withDefaults()
	auth, err := newAuthenticator(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		auth:     auth,
		metrics:  newMetrics(),
		sessions: &sessions{window: cfg.ResumeWindow, maxClosed: cfg.MaxConnections, byID: map[string]*session{}},
		conns:    map[*conn]struct{}{},
		perToken: map[string]int{},
	}
	s.ctx, s.hardStop = context.WithCancel(context.Background())
	s.prov = provider.New(cfg.Client, &provider.Options{Namespace: cfg.Namespace,
		Observer: provider.MultiObserver(s.metrics, cfg.Observer), Logger: cfg.Logger, FairQueue: cfg.FairQueue})
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: handshakeTimeout,
		Subprotocols:     []string{Subprotocol},
		// The origin was checked before the upgrade, against --allow-origin.
		CheckOrigin: func(*http.Request) bool { return true },
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			http.Error(w, reason.Error(), status)
		},
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /ws", s.serveWS)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	s.mux.HandleFunc("GET /readyz", s.serveReady)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	return s, nil
}

// Handler returns the bridge's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve accepts connections on l until Shutdown, speaking TLS when Config.TLS is set. It
// returns nil after Shutdown. It refuses insecure mode when l is not on a loopback address.
func (s *Server) Serve(l net.Listener) error {
	if s.cfg.Insecure {
		if tcp, ok := l.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			return ErrInsecureNotLoopback
		}
	}
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	l = batchListener{l} // below TLS: see batchConn
	if s.cfg.TLS != nil {
		conf := s.cfg.TLS.Clone()
		// WebSocket upgrades need HTTP/1.1; never negotiate h2.
		conf.NextProtos = []string{"http/1.1"}
		l = tls.NewListener(l, conf)
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil
	}
	s.http = hs
	s.mu.Unlock()
	if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bridge: serve: %w", err)
	}
	return nil
}

// Shutdown stops the bridge gracefully (see docs/bridge-protocol.md, Shutdown): it stops
// accepting connections and drains every connection: new acquire and lease requests are refused
// with shutting_down, waits in flight end, each client is told with going_away, and a
// connection is closed with 1001 once it holds no lease and runs no request, or when the drain
// ends, ClientTimeout plus a second before ctx's deadline (30 s after the call without one).
// Leases still held then are freed ClientTimeout after their client's last frame, when it has
// certainly stopped believing. Shutdown returns once every connection is done, or when ctx is
// done: it then cuts the remaining connections, stops renewing their leases (their keys expire
// with their TTL; nothing is deleted before its holder stopped believing), logs what was left and
// returns an error wrapping ctx's error. Shutdown does not close Config.Client.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	hs := s.http
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var errs []error
	if hs != nil {
		if err := hs.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("bridge: stop HTTP server: %w", err))
		}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultDrain)
	}
	drainEnd := deadline.Add(-s.cfg.ClientTimeout - closeGrace)
	for _, c := range conns {
		go c.goAway(drainEnd)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		open, leases := len(s.conns), 0
		for c := range s.conns {
			leases += c.leaseCount()
		}
		s.mu.Unlock()
		s.hardStop()
		for _, c := range conns {
			_ = c.ws.NetConn().Close()
		}
		s.log.Warn("shutdown cut short: the leases left stop being renewed and their keys expire with their TTL",
			"connections_open", open, "leases_left", leases, "error", ctx.Err())
		errs = append(errs, fmt.Errorf("bridge: shutdown cut short (%d connection(s) still open, %d lease(s) left to expire): %w",
			open, leases, ctx.Err()))
		<-done
	}
	s.hardStop()
	s.prov.Close()
	return errors.Join(errs...)
}

// defaultDrain bounds a shutdown whose context has no deadline.
const defaultDrain = 30 * time.Second

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// serveReady answers 200 when Redis answers PING, else 503.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if s.isStopping() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.cfg.Client.Ping(ctx).Err(); err != nil {
		s.log.Warn("not ready: Redis does not answer PING", "error", err)
		http.Error(w, "redis: not reachable", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
	// Ready all the same, but say it: a policy that can evict held locks (an unreadable one,
	// where INFO is refused, says nothing).
	if policy, err := redisconn.EvictionPolicy(ctx, s.cfg.Client); err == nil {
		if warning := redisconn.EvictionWarning(policy); warning != "" {
			fmt.Fprintln(w, "warning: "+warning)
		}
	}
}

// serveWS checks the token, the origin and the subprotocol before upgrading, so that a refused
// client gets a plain HTTP status and never a WebSocket.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	log := s.log.With("remote", r.RemoteAddr)
	if s.isStopping() {
		s.reject(w, rejectShuttingDown, http.StatusServiceUnavailable, "the bridge is shutting down")
		return
	}
	token, ok := s.auth.authenticate(r)
	if !ok {
		log.Warn("refused a connection without a valid token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="locktui-bridge"`)
		s.reject(w, rejectUnauthorized, http.StatusUnauthorized, "a valid bearer token is required (Authorization: Bearer <token>)")
		return
	}
	if !s.auth.originAllowed(r) {
		log.Warn("refused a browser origin", "origin", r.Header.Get("Origin"))
		s.reject(w, rejectOrigin, http.StatusForbidden, "origin not allowed (see --allow-origin)")
		return
	}
	if offered := websocket.Subprotocols(r); len(offered) > 0 && !slices.Contains(offered, Subprotocol) {
		s.reject(w, rejectSubprotocol, http.StatusBadRequest, unsupportedSubprotocol)
		return
	}
	if reason, msg := s.admit(token.Secret); reason != "" {
		log.Warn("refused a connection over the limit", "reason", reason)
		w.Header().Set("Retry-After", "1")
		s.reject(w, reason, http.StatusServiceUnavailable, msg)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.leave(token.Secret)
		log.Debug("WebSocket upgrade failed", "error", err)
		return
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		s.leave(token.Secret)
		_ = ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "the bridge is shutting down"), time.Now().Add(writeWait))
		_ = ws.Close()
		return
	}
	s.nextConn++
	c := newConn(s, ws, token, log.With("conn", s.nextConn))
	c.holder = clientHolder(r)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.connections.Inc()
	go c.run()
}

func (s *Server) reject(w http.ResponseWriter, reason string, status int, msg string) {
	s.metrics.rejected.WithLabelValues(reason).Inc()
	http.Error(w, msg, status)
}

// admit counts a connection about to be upgraded against the limits; a non-empty reason says
// which one refuses it.
func (s *Server) admit(secret string) (reason, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.open >= s.cfg.MaxConnections:
		return rejectTooManyConnections, fmt.Sprintf("the bridge has %d connections, its limit (--max-connections): retry later", s.cfg.MaxConnections)
	case s.perToken[secret] >= s.cfg.MaxConnectionsPerToken:
		return rejectTooManyForToken, fmt.Sprintf("this token has %d connections, its limit (--max-connections-per-token): retry later", s.cfg.MaxConnectionsPerToken)
	}
	s.open++
	s.perToken[secret]++
	return "", ""
}

// leave undoes admit.
func (s *Server) leave(secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.perToken[secret]--; s.perToken[secret] <= 0 {
		delete(s.perToken, secret)
	}
}

// forget removes a finished connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.leave(c.token.Secret)
	s.metrics.connections.Dec()
	s.wg.Done()
}

func (s *Server) welcome(token Token, session string) []byte {
	data, _ := json.Marshal(newWelcome(&s.cfg, token, session))
	return data
}
