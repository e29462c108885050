package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// options holds every flag of one command line. Each command's FlagSet binds the flags it
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
	json    bool
	owner   string
	force   bool
	expire  time.Duration
	wait    time.Duration
	timeout time.Duration
	grace   time.Duration

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

// newFlagSet returns a silent FlagSet: parseArgs reports the errors and usage is hand-written.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func (o *options) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.url, "redis", o.url, "Redis URL")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "key prefix")
	fs.StringVar(&o.tls.CA, "tls-ca", o.tls.CA, "CA bundle")
	fs.StringVar(&o.tls.Cert, "tls-cert", o.tls.Cert, "client certificate")
	fs.StringVar(&o.tls.Key, "tls-key", o.tls.Key, "client key")
}

func (o *options) consoleFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.readOnly, "read-only", o.readOnly, "no changes")
	o.auditFlags(fs)
	fs.Var(durationFlag{&o.refresh}, "refresh", "refresh interval")
}

// auditFlags are the console's flags that name the audit trail; release and release-all take
// them too.
func (o *options) auditFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.auditLog, "audit-log", o.auditLog, "audit file")
	fs.StringVar(&o.auditStream, "audit-stream", o.auditStream, "audit stream")
}

// record notes which flags of fs the command line set.
func (o *options) record(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
}

// misplacedFlag returns a usage error for the first console flag set on the command line (for
// example before the command name) that c does not accept, or nil.
func (o *options) misplacedFlag(c *command) error {
	for _, name := range consoleFlagNames {
		if !o.set[name] || c.console {
			continue
		}
		switch audits := slices.Contains(auditFlagNames, name); {
		case audits && c.audited:
			continue
		case audits:
			return usagef(c.name, "--%s applies only to the console, demo, release and release-all, not to %s", name, c.name)
		default:
			return usagef(c.name, "--%s applies only to the console and demo, not to %s", name, c.name)
		}
	}
	return nil
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

// durationFlag is a flag.Value for a non-negative duration: "500ms", "30s", "5m", or a bare
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
	if errors.As(err, &ue) && ue.cmd == "" {
		return &usageError{cmd: cmd, msg: ue.msg}
	}
	return err
}

// errHelp is returned by parseArgs for -h, -help and --help.
var errHelp = errors.New("help requested")

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

// parseArgs sets the flags of fs wherever they appear in args: "-name", "--name", with the
// value as the next argument or after "=" (boolean flags take no separate value, and a lone
// "true" or "false" right after one is refused rather than taken as an argument). Other
// arguments are returned in order; "--" ends the flags. With stopAtFirst the parse stops at the
// first non-flag argument, which starts positional followed by everything after it.
func parseArgs(fs *flag.FlagSet, args []string, stopAtFirst bool) (parsedArgs, error) {
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			p.dashdash = true
			p.tail = args[i+1:]
			return p, nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			if stopAtFirst {
				p.positional = args[i:]
				return p, nil
			}
			p.positional = append(p.positional, arg)
			continue
		}
		spelled, value, hasValue := strings.Cut(arg, "=")
		name := strings.TrimPrefix(spelled[1:], "-")
		if name == "h" || name == "help" {
			return p, errHelp
		}
		f := fs.Lookup(name)
		if f == nil || strings.HasPrefix(name, "-") {
			return p, usagef("", "unknown flag %s", spelled)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
				if i+1 < len(args) && (args[i+1] == "true" || args[i+1] == "false") {
					return p, usagef("", "%s takes no separate value (%q would be read as an argument); write %s=%s",
						spelled, args[i+1], spelled, args[i+1])
				}
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return p, usagef("", "flag %s needs a value", spelled)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return p, usagef("", "invalid value %q for %s: %v", value, spelled, err)
		}
	}
	return p, nil
}
