package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// options holds every flag of one command line. Each command's flag set binds the flags it
// accepts to these fields, so global flags given before the command and after it land in the
// same place (the later one wins).
type options struct {
	// Global flags.
	url       string
	namespace string
	tls       redisconn.TLSFiles

	// Console flags.
	readOnly    bool
	auditLog    string
	auditStream string
	refresh     time.Duration

	// Command flags.
	json         bool
	owner        string
	force        bool
	now          bool          // release: free the keys at once, without telling a lease's holder first
	expire       time.Duration // acquire's TTL
	leaseExpire  time.Duration // run's lease
	wait         time.Duration
	timeout      time.Duration
	grace        time.Duration
	conflictExit int
	fairQueue    bool // run: wait in the keys' fair queue
	match        string
	noTTL        bool

	// set records the flags given on the command line, by name.
	set map[string]bool
}

// consoleFlagNames are the flags only the console and the demo accept, and auditFlagNames those
// that the commands that release locks accept as well.
var (
	consoleFlagNames = []string{"read-only", "audit-log", "audit-stream", "refresh"}
	auditFlagNames   = []string{"audit-log", "audit-stream"}
)

func newOptions(getenv func(string) string) *options {
	url := getenv("REDIS_URL")
	if url == "" {
		url = redisconn.DefaultURL
	}
	return &options{
		url:       url,
		namespace: provider.DefaultNamespace,
		refresh:   DefaultRefresh,
		set:       map[string]bool{},
	}
}

// globalFlags are the flags of every command (persistent flags of the root).
func (o *options) globalFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.url, "redis", o.url,
		"Redis server `URL` (default $REDIS_URL, else "+redisconn.DefaultURL+"); rediss:// for TLS, ?master_name=NAME for Sentinel, ?cluster=true for Cluster")
	// The default comes from $REDIS_URL, which may hold a password: never print it.
	fs.Lookup("redis").DefValue = ""
	fs.StringVar(&o.namespace, "namespace", o.namespace, "key prefix `NS`")
	fs.StringVar(&o.tls.CA, "tls-ca", o.tls.CA, "CA bundle `FILE` that signed the server certificate (rediss://)")
	fs.StringVar(&o.tls.Cert, "tls-cert", o.tls.Cert, "client certificate `FILE` for mutual TLS, with --tls-key")
	fs.StringVar(&o.tls.Key, "tls-key", o.tls.Key, "client key `FILE` for mutual TLS")
}

// consoleFlags are the flags of the console (the root without a command) and the demo.
func (o *options) consoleFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.readOnly, "read-only", o.readOnly, "show locks, change nothing (and audit nothing)")
	fs.Var(durationFlag{&o.refresh}, "refresh", "re-read the locks every `D`")
	o.auditFlags(fs)
}

// auditFlags are the console's flags that name the audit trail; release and release-all take
// them too.
func (o *options) auditFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.auditLog, "audit-log", o.auditLog,
		"append the audit records to `PATH` (default $XDG_STATE_HOME/locktui/audit.jsonl, else ~/.local/state/locktui/audit.jsonl)")
	fs.StringVar(&o.auditStream, "audit-stream", o.auditStream, "add the audit records to the Redis stream `S` as well")
}

// record notes which flags of fs the command line set.
func (o *options) record(fs *pflag.FlagSet) {
	fs.Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
}

// misplaced returns the usage error for console flag name given before command cmd, which does
// not accept it, or nil when name is not a console flag.
func misplaced(name, cmd string) error {
	switch {
	case !slices.Contains(consoleFlagNames, name):
		return nil
	case slices.Contains(auditFlagNames, name):
		return usagef(cmd, "--%s applies only to the console, demo, release and release-all, not to %s", name, cmd)
	default:
		return usagef(cmd, "--%s applies only to the console and demo, not to %s", name, cmd)
	}
}

// validateGlobal checks the global flags.
func (o *options) validateGlobal() error {
	switch {
	case o.url == "":
		return usagef("", "--redis is empty; give a URL such as %s", redisconn.DefaultURL)
	case o.namespace == "":
		return usagef("", "--namespace is empty; locktui needs a key prefix (default %q)", provider.DefaultNamespace)
	case (o.tls.Cert == "") != (o.tls.Key == ""):
		return usagef("", "--tls-cert and --tls-key go together")
	case (o.tls != redisconn.TLSFiles{}) && !strings.HasPrefix(strings.ToLower(o.url), "rediss://"):
		return usagef("", "--tls-ca, --tls-cert and --tls-key need a rediss:// URL, got %s", redisconn.Describe(o.url))
	}
	return nil
}

// validateConsole checks the console flags.
func (o *options) validateConsole() error {
	if o.refresh <= 0 {
		return usagef("", "--refresh must be positive, got %s", o.refresh)
	}
	return nil
}

func (o *options) consoleConfig() ConsoleConfig {
	return ConsoleConfig{
		URL:         o.url,
		Namespace:   o.namespace,
		TLS:         o.tls,
		ReadOnly:    o.readOnly,
		AuditLog:    o.auditLog,
		AuditStream: o.auditStream,
		Refresh:     o.refresh,
	}
}

// durationFlag is a flag value for a non-negative duration: "500ms", "30s", "5m", or a bare
// number of seconds ("30", "1.5") as Medusa's options give them.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || secs != secs || secs > 1e9 {
			return errors.New("not a duration (examples: 500ms, 30s, 5m, or seconds as a number)")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	*f.d = d
	return nil
}

// Type names the value in the help when the usage text names none.
func (durationFlag) Type() string { return "D" }

// exitCodeFlag is a flag value for a process exit code, 0 to 255.
type exitCodeFlag struct{ n *int }

func (f exitCodeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return strconv.Itoa(*f.n)
}

func (f exitCodeFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 {
		return errors.New("an exit code is a whole number from 0 to 255")
	}
	*f.n = n
	return nil
}

// Type names the value in the help when the usage text names none.
func (exitCodeFlag) Type() string { return "N" }

// usageError is a command line mistake: it exits with ExitUsage and a hint to the help.
type usageError struct {
	cmd string // the command whose help the hint names; "" for the main help
	msg string
}

func (e *usageError) Error() string { return e.msg }

func (e *usageError) hint() string {
	if e.cmd == "" {
		return "Run 'locktui --help' for usage."
	}
	return "Run 'locktui " + e.cmd + " --help' for usage."
}

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// withCommand points the hint of a usage error at cmd's help when it names no command yet.
func withCommand(err error, cmd string) error {
	var ue *usageError
	if errors.As(err, &ue) && ue.cmd == "" && cmd != "" {
		return &usageError{cmd: cmd, msg: ue.msg}
	}
	return err
}

// parsedArgs are the arguments left after the flags.
type parsedArgs struct {
	// positional are the arguments before "--" that are not flags or flag values, in order.
	positional []string
	// tail are the arguments after "--", untouched.
	tail []string
	// dashdash reports whether "--" was given.
	dashdash bool
}

// all returns positional and tail together, for commands without a use for "--".
func (p parsedArgs) all() []string { return append(slices.Clone(p.positional), p.tail...) }

// splitAtDash splits a command's arguments where "--" was (dash is cobra's ArgsLenAtDash: -1
// when there was none).
func splitAtDash(args []string, dash int) parsedArgs {
	if dash < 0 {
		return parsedArgs{positional: args}
	}
	return parsedArgs{positional: args[:dash], tail: args[dash:], dashdash: true}
}
