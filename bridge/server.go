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

	mu       sync.Mutex
	http     *http.Server // set by Serve
	conns    map[*conn]struct{}
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
		cfg:     cfg,
		log:     cfg.Logger,
		auth:    auth,
		metrics: newMetrics(),
		conns:   map[*conn]struct{}{},
	}
	obs := observers{s.metrics}
	if cfg.Observer != nil {
		obs = append(obs, cfg.Observer)
	}
	s.prov = provider.New(cfg.Client, &provider.Options{Namespace: cfg.Namespace, Observer: obs, Logger: cfg.Logger})
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

// Shutdown stops the bridge gracefully: it stops accepting connections, answers new requests
// with shutting_down, ends the waits in flight, releases every lease (owner-checked), then
// closes every connection with 1001. Shutdown returns once ctx is done even if that work is not:
// it then cuts the remaining connections, logs what was left and returns an error wrapping
// ctx's error. The releases left go on in the background until they finish or the Redis client
// is closed; keys never released expire with their TTL. Shutdown does not close Config.Client.
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
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.goAway(ctx) }) // returns once ctx is done
	}
	wg.Wait()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		open, unreleased := len(s.conns), 0
		for c := range s.conns {
			_ = c.ws.Close()
			unreleased += int(c.unreleased.Load())
		}
		s.mu.Unlock()
		s.log.Warn("shutdown cut short: leases not released yet are released in the background until the process exits, else their keys expire with their TTL",
			"connections_open", open, "leases_unreleased", unreleased, "error", ctx.Err())
		errs = append(errs, fmt.Errorf("bridge: shutdown cut short (%d connection(s) still closing, %d lease(s) not released yet): %w",
			open, unreleased, ctx.Err()))
	}
	return errors.Join(errs...)
}

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
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
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
		s.reject(w, rejectSubprotocol, http.StatusBadRequest, "unsupported subprotocol: this bridge speaks "+Subprotocol)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		log.Debug("WebSocket upgrade failed", "error", err)
		return
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		_ = ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "the bridge is shutting down"), time.Now().Add(writeWait))
		_ = ws.Close()
		return
	}
	s.nextConn++
	c := newConn(s, ws, token, log.With("conn", s.nextConn))
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

// forget removes a finished connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.metrics.connections.Dec()
	s.wg.Done()
}

func (s *Server) welcome(token Token) []byte {
	data, _ := json.Marshal(welcome{Type: "welcome", Version: ProtocolVersion, Namespace: s.cfg.Namespace,
		Limits: s.cfg.Limits, OwnerPrefix: token.OwnerPrefix})
	return data
}
