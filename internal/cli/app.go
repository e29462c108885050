package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// Exit codes of locktui. Codes from 126 up follow the shell's conventions for run.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: a runtime error (bad Redis URL or TLS files, Redis unreachable, Redis error,
	// an audit log that cannot be opened).
	ExitError = 1
	// ExitUsage: an unknown command or flag, a missing argument or a bad flag value.
	ExitUsage = 2
	// ExitConflict: acquire found a key held by another owner; release did not release every
	// key (not held, held by another owner, or not a lock); get found no such key.
	ExitConflict = 3
	// ExitTimedOut: run did not get the lock within --timeout, or found it held with --timeout
	// 0 (EX_TEMPFAIL of sysexits.h); --conflict-exit-code replaces it.
	ExitTimedOut = 75
	// ExitLockLost: run lost its lease, or its renewal was overdue, while the command ran; the
	// command got SIGTERM, then SIGKILL after --grace or at the lease's deadline, whichever came
	// first.
	ExitLockLost = 76
	// ExitCannotExecute: run found the command but could not start it (permission denied).
	ExitCannotExecute = 126
	// ExitNotFound: run did not find the command.
	ExitNotFound = 127
	// ExitSignalBase plus a signal number: the command run started was killed by that signal,
	// or locktui itself was interrupted by it while waiting for a lock.
	ExitSignalBase = 128
)

// DefaultRefresh is the console's refresh interval when --refresh is not given.
const DefaultRefresh = time.Second

// App is the locktui command line. The zero value works: nil writers mean os.Stdout and
// os.Stderr, a nil Getenv means os.Getenv; nil Console and Demo make those entry points
// unavailable.
type App struct {
	// Console opens the interactive console; Run calls it when no command is given. When nil,
	// locktui without a command prints the help on stderr and exits with ExitUsage.
	Console func(ctx context.Context, cfg ConsoleConfig) error
	// Demo opens the console on a built-in demo (locktui demo). When nil, demo is a usage
	// error.
	Demo func(ctx context.Context, cfg ConsoleConfig) error
	// NewObserver, when set, is called once per command that takes or releases locks, with
	// the command's Redis client and namespace; the observer receives the lock events of the
	// provider and of the Inspector's force-releases (for example a publisher of the events
	// channel) and closeFn, if not nil, runs before the command returns.
	NewObserver func(client redis.UniversalClient, namespace string) (obs provider.Observer, closeFn func())

	// Stdin is passed to the command of run; nil gives it an empty input.
	Stdin io.Reader
	// Stdout receives results (tables, JSON, usage asked for with --help).
	Stdout io.Writer
	// Stderr receives errors, warnings and usage errors.
	Stderr io.Writer
	// Progress, when set, receives list's progress line on a large database (see
	// walkProgress); by default it goes to stderr when stderr is a terminal, and nowhere
	// otherwise.
	Progress io.Writer
	// Budget, when set, returns the read budget that paces each walk of the namespace (list,
	// release-all, completion) instead of budget.New(budget.Default) (tests run it on a virtual
	// clock with budget.Limiter.SetClock).
	Budget func() *budget.Limiter
	// Getenv reads REDIS_URL.
	Getenv func(string) string
	// Signals, when set, replaces the subscription to SIGINT, SIGTERM and SIGHUP that
	// acquire --wait and run make while they wait or supervise a command (tests inject
	// signals here).
	Signals <-chan os.Signal
	// Version, when set, is the module version locktui version prints instead of the one in
	// the build information.
	Version string
	// BuildInfo, when set, replaces debug.ReadBuildInfo for locktui version (tests inject
	// build settings here).
	BuildInfo func() (*debug.BuildInfo, bool)
}

// ConsoleConfig is what the console and the demo get from the command line: the global flags
// and the console flags.
type ConsoleConfig struct {
	// URL of the Redis server: --redis, else $REDIS_URL, else redisconn.DefaultURL.
	URL string
	// Namespace is the key prefix: --namespace, default provider.DefaultNamespace.
	Namespace string
	// TLS holds the --tls-ca, --tls-cert and --tls-key files for rediss:// URLs.
	TLS redisconn.TLSFiles
	// ReadOnly (--read-only) disables every action that changes a lock.
	ReadOnly bool
	// AuditLog (--audit-log PATH) is the file to append the audit records to; "" means
	// audit.DefaultPath() (see OpenAudit).
	AuditLog string
	// AuditStream (--audit-stream NAME) is a Redis stream to add the audit records to as well;
	// "" for none.
	AuditStream string
	// Refresh (--refresh) is how often the console re-reads the locks; default DefaultRefresh.
	Refresh time.Duration
}

// Open returns a client for cfg.URL with cfg.TLS (see redisconn.Open); the caller closes it.
func (cfg ConsoleConfig) Open() (redis.UniversalClient, error) {
	return redisconn.Open(cfg.URL, cfg.TLS)
}

// Run executes the command line args (without the program name) and returns the exit code.
// ctx bounds the command; run and acquire --wait also stop on SIGINT, SIGTERM and SIGHUP.
func (a *App) Run(ctx context.Context, args []string) int {
	return a.newSession().run(ctx, args)
}

// session is one Run call: the App's settings with writers safe for concurrent use.
type session struct {
	app    *App
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	args   []string // the command line as parsed (flags spelled with two dashes)
	code   int      // the exit code the command's body returned
}

func (a *App) newSession() *session {
	stdout, stderr := a.Stdout, a.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	getenv := a.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	outs := lockWriters(stdout, stderr)
	return &session{app: a, stdout: outs[0], stderr: outs[1], getenv: getenv}
}

// errorf prints one "locktui: …" line on stderr.
func (s *session) errorf(format string, args ...any) {
	fmt.Fprintf(s.stderr, "locktui: "+format+"\n", args...)
}

// warnf prints one "locktui: warning: …" line on stderr.
func (s *session) warnf(format string, args ...any) {
	fmt.Fprintf(s.stderr, "locktui: warning: "+format+"\n", args...)
}

// fail prints err as one line and returns its exit code: ExitUsage for usage errors, else
// ExitError.
func (s *session) fail(err error) int {
	s.errorf("%s", oneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(s.stderr, ue.hint())
		return ExitUsage
	}
	return ExitError
}

// run parses args with the command tree and runs the command they name.
func (s *session) run(ctx context.Context, args []string) int {
	o := newOptions(s.getenv)
	root := s.newRoot(o)
	if len(args) == 0 || !isCompletionRequest(args[0]) {
		var err error
		if args, err = prepareArgs(root, args); err != nil {
			return s.fail(err)
		}
	}
	s.args = args
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		// The bodies report their own failures and return nil: an error here is the command
		// line's.
		var ue *usageError
		if !errors.As(err, &ue) {
			err = usagef(commandName(cmd), "%s", err)
		}
		return s.fail(withCommand(err, commandName(cmd)))
	}
	return s.code
}

// console runs the console or the demo entry point with the parsed flags.
func (s *session) console(ctx context.Context, o *options, open func(context.Context, ConsoleConfig) error) int {
	if open == nil {
		printHelp(s.stderr, s.newRoot(newOptions(s.getenv)))
		return ExitUsage
	}
	if err := o.validateGlobal(); err != nil {
		return s.fail(err)
	}
	if err := o.validateConsole(); err != nil {
		return s.fail(err)
	}
	if err := open(ctx, o.consoleConfig()); err != nil {
		return s.fail(err)
	}
	return ExitOK
}

func runDemo(ctx context.Context, s *session, o *options, p parsedArgs) int {
	if len(p.all()) > 0 {
		return s.fail(usagef("demo", "demo takes no arguments, got %q", p.all()[0]))
	}
	if s.app.Demo == nil {
		return s.fail(usagef("demo", "the demo is not available in this build of locktui"))
	}
	return s.console(ctx, o, s.app.Demo)
}
