//go:build unix

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/freeport"
	"github.com/locktui/locktui/internal/tailbuf"
)

// InstallHint tells a developer how to get the PostgreSQL server binaries.
const InstallHint = "PostgreSQL binaries (initdb, postgres, createdb, psql) not found beside initdb on PATH nor in /usr/lib/postgresql/*/bin: install them with `apt-get update && apt-get install -y postgresql` (Debian/Ubuntu) or `brew install postgresql` (macOS)"

// ErrNotFound is returned by BinDir when the server binaries cannot be found. Its message is
// InstallHint.
var ErrNotFound = errors.New(InstallHint)

// User is the database superuser the server is initialised with; clients connect as it, without a
// password (trust authentication, loopback only).
const User = "postgres"

// systemUser is the account that runs initdb and postgres when the test runs as root.
const systemUser = "postgres"

const (
	// startTimeout bounds initdb and each attempt's wait for the server to accept connections.
	startTimeout = 60 * time.Second
	// attempts is how many ports Start tries (another process may take the free port first).
	attempts = 5
	// stopGrace is how long the server gets to shut down after SIGINT before its group is killed.
	stopGrace = 10 * time.Second
	// clientTimeout bounds one createdb or psql call.
	clientTimeout = 2 * time.Minute
	// readyLine is what postgres logs once it accepts connections.
	readyLine = "database system is ready to accept connections"
)

// Server is a postgres process owned by one test. Its methods are safe for concurrent use.
type Server struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// BinDir holds the binaries the server was started from (initdb, postgres, psql, createdb).
	BinDir string

	dir    string // the temporary directory: data/ and the Unix socket
	cmd    *exec.Cmd
	done   chan struct{} // closed when the server process has exited
	output *tailbuf.Buffer

	stopOnce sync.Once
}

// Start initialises a cluster in a new temporary directory, starts postgres on a free loopback
// port and waits until it accepts connections; the server is stopped and its directory removed
// at t.Cleanup. It fails the test (never skips) when the binaries are missing.
func Start(t testing.TB) *Server {
	t.Helper()
	srv, err := start(t.Context())
	if errors.Is(err, ErrNotFound) {
		t.Fatal(InstallHint)
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// URL is the connection URL of database db on the server, as the superuser:
// postgres://postgres@127.0.0.1:port/db.
func (s *Server) URL(db string) string {
	return "postgres://" + User + "@" + s.Addr + "/" + db
}

// CreateDB creates database name, a copy of template when template is not empty (CREATE DATABASE
// … TEMPLATE: cheap, but template must have no open connections).
func (s *Server) CreateDB(t testing.TB, name, template string) {
	t.Helper()
	args := []string{}
	if template != "" {
		args = append(args, "--template", template)
	}
	if _, err := s.client(t.Context(), "createdb", append(args, name)...); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Query runs sql in database db with psql and returns its output unaligned, without headers
// (psql -At: one row a line, columns separated by "|"), trimmed.
func (s *Server) Query(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := s.client(t.Context(), "psql", "--no-psqlrc", "--quiet", "--tuples-only", "--no-align",
		"--set", "ON_ERROR_STOP=1", "--dbname", db, "--command", sql)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return strings.TrimSpace(out)
}

// client runs a client program of BinDir against the server over TCP.
func (s *Server) client(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	full := append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(s.Port), "--username", User, "--no-password"}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(s.BinDir, name), full...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Output returns the end of the server's log (its stderr).
func (s *Server) Output() string { return s.output.String() }

// Stop shuts the server down (a fast shutdown: SIGINT; SIGKILL to its process group after
// stopGrace) and removes its directory. It is idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.shutdown()
		_ = os.RemoveAll(s.dir)
	})
}

// shutdown stops the server process and waits until it has exited.
func (s *Server) shutdown() {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// binaries are the programs Start and the client methods run; BinDir needs them all in one
// directory.
var binaries = []string{"initdb", "postgres", "createdb", "psql"}

// BinDir returns the directory of the binaries: that of initdb on PATH (symbolic links
// followed), else the highest version's /usr/lib/postgresql/<version>/bin. Missing binaries give
// an error matching ErrNotFound.
func BinDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range append(dirs, debian...) {
		if hasBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNotFound
}

// hasBinaries reports whether dir holds every program of binaries.
func hasBinaries(dir string) bool {
	for _, name := range binaries {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf is the major version in /usr/lib/postgresql/<version>/bin, 0 if it is not a number.
func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// start runs initdb and then postgres, retrying on another port when an attempt fails.
func start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "locktui-pg-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory for postgres: %w", err)
	}
	if err := initdb(ctx, bin, dir, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var lastErr error
	for range attempts {
		var srv *Server
		if srv, lastErr = launch(ctx, bin, dir, cred); lastErr == nil {
			return srv, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

// serverCredential is nil when the test does not run as root; as root, the credential of the
// postgres system user, since initdb and postgres refuse to run as root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(systemUser)
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb and postgres refuse to run as root: no %q system user to run them as (%v); the Debian package creates it: `apt-get install -y postgresql`", systemUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("the %q system user: %w", systemUser, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// initdb initialises dir/data: superuser User, trust authentication, UTF-8 with the C locale, no
// fsync. As root, dir is handed to the postgres system user first.
func initdb(ctx context.Context, bin, dir string, cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("hand %s to the %s user: %w", dir, systemUser, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"--pgdata", filepath.Join(dir, "data"), "--username", User, "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.Dir = dir // the postgres user may not enter the caller's working directory
	cmd.SysProcAttr = sysProcAttr(cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, lastLines(string(out), 10))
	}
	return nil
}

// launch starts postgres on a free port and waits until it accepts connections.
func launch(ctx context.Context, bin, dir string, cred *syscall.Credential) (*Server, error) {
	port, err := freeport.Loopback()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port:   port,
		BinDir: bin,
		dir:    dir,
		done:   make(chan struct{}),
		output: tailbuf.New(64 << 10),
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "max_connections=300",
		// A test database: nothing needs to survive a crash.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.output, s.output
	s.cmd.SysProcAttr = sysProcAttr(cred)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.awaitReady(ctx); err != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return nil, fmt.Errorf("%w (log: %s)", err, lastLines(s.output.String(), 5))
	}
	return s, nil
}

// awaitReady waits until the server logs readyLine, exits, or startTimeout passes.
func (s *Server) awaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.Contains(s.output.String(), readyLine) {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres on %s exited during start-up", s.Addr)
		case <-ctx.Done():
			return fmt.Errorf("postgres on %s did not accept connections within %s", s.Addr, startTimeout)
		case <-tick.C:
		}
	}
}

// lastLines returns the last n non-empty lines of s joined with " | ".
func lastLines(s string, n int) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' })
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
