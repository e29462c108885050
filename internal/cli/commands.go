package cli

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Annotations of a command that the help reads.
const (
	annotationAudited = "locktui/audited" // accepts the audit flags and writes the trail
	annotationConsole = "locktui/console" // accepts the console flags
	annotationRank    = "locktui/rank"    // the command's place in the help
)

// runFunc is a command's body: it gets the parsed flags and arguments and returns the exit code.
type runFunc func(ctx context.Context, s *session, o *options, p parsedArgs) int

// newRoot returns the command tree of one Run: the root is the console, the subcommands in the
// order the help lists them. A new tree per Run, so nothing is shared between runs.
func (s *session) newRoot(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:   "locktui",
		Short: "inspect and manage Medusa locks in Redis",
		Long:  `locktui inspects and manages Medusa locks in Redis (compatible with @medusajs/locking-redis).`,
		Args:  s.noCommand,
		RunE: func(c *cobra.Command, _ []string) error {
			o.record(c.Flags())
			s.code = s.console(c.Context(), o, s.app.Console)
			return nil
		},
		Annotations:           map[string]string{annotationConsole: "true"},
		DisableFlagsInUseLine: true,
		SilenceErrors:         true,
		SilenceUsage:          true,
		// SuggestionsFor needs it set; cobra's own default is 2 as well.
		SuggestionsMinimumDistance: 2,
	}
	// Before the completion command is made: it keeps the writer it finds.
	root.SetIn(strings.NewReader(""))
	root.SetOut(s.stdout)
	root.SetErr(s.stderr)
	o.globalFlags(root.PersistentFlags())
	root.PersistentFlags().BoolP("help", "h", false, "show this help")
	// --version as well as the version command, as gh and kubectl users expect either.
	root.Version = "-"
	root.SetVersionTemplate(s.versionText())
	root.Flags().Bool("version", false, "print the version, as locktui version does")
	_ = root.Flags().MarkHidden("version") // not a console flag; the version command is listed
	o.consoleFlags(root.Flags())
	root.SetFlagErrorFunc(s.flagError)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { printHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { printHelp(c.OutOrStderr(), c); return nil })
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "show the help of locktui or of a command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 || (target == c.Root() && len(args) > 0) {
				return usagef("", "unknown command %q", strings.Join(args, " "))
			}
			printHelp(c.OutOrStdout(), target)
			return nil
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range c.Root().Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	})
	for i, c := range s.subcommands(o) {
		c.Annotations[annotationRank] = strconv.Itoa(i)
		root.AddCommand(c)
	}
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "print a shell completion script (bash, zsh, fish or powershell)"
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usagef("completion", "no completion for %q: give bash, zsh, fish or powershell", args[0])
				}
				printHelp(c.OutOrStdout(), c)
				return nil
			}
		}
	}
	return root
}

// command builds one subcommand. flags binds its own flags; keys, when set, completes the
// positional arguments with lock keys from Redis.
func (s *session) command(o *options, use, short, long string, run runFunc, flags func(*pflag.FlagSet), keys bool) *cobra.Command {
	c := &cobra.Command{
		Use:                   use,
		Short:                 short,
		Long:                  long,
		Args:                  cobra.ArbitraryArgs,
		DisableFlagsInUseLine: true,
		Annotations:           map[string]string{},
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		o.record(c.Flags())
		if err := o.validateGlobal(); err != nil {
			return withCommand(err, c.Name())
		}
		s.code = run(c.Context(), s, o, splitAtDash(args, c.ArgsLenAtDash()))
		return nil
	}
	if flags != nil {
		flags(c.Flags())
	}
	c.ValidArgsFunction = cobra.NoFileCompletions
	if keys {
		c.ValidArgsFunction = s.completeKeys(o)
	}
	if c.Flags().Lookup("owner") != nil {
		_ = c.RegisterFlagCompletionFunc("owner", s.completeOwners(o))
	}
	return c
}

// subcommands are locktui's commands in the order the help lists them.
func (s *session) subcommands(o *options) []*cobra.Command {
	list := s.command(o, "list [--json] [--match GLOB] [--owner OWNER] [--no-ttl]",
		"list the locks in the namespace",
		`List every key under the namespace, sorted by key: its owner and time to live. Keys under
the namespace that are not locks (another Redis type) are marked foreign. The filters combine
(a key is listed when it passes all of them).

The namespace is read as the console reads it, paced to 20,000 keys examined a second (SCAN
walks the whole database), so list never loads Redis with a burst: on a database of 1,000,000
keys it takes about 50 seconds, and on a terminal a line on stderr says how far it has come.

--json prints one JSON array of {"key", "redis_key", "owner", "ttl_ms", "holder"} objects (key
without the namespace; ttl_ms -1 for a key that never expires; holder the lock's holder record,
null for a lock taken by stock Medusa; foreign keys have "foreign": true and owner ""); []
when there are none.`,
		runList, func(fs *pflag.FlagSet) {
			fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
			fs.StringVar(&o.match, "match", "", "only keys (without the namespace) that match `GLOB`: * ? [abc] [^a] [a-z] \\x as in Redis MATCH, case-sensitive")
			fs.StringVar(&o.owner, "owner", "", "only locks held by exactly `OWNER` (\"*\" is the anonymous owner)")
			fs.BoolVar(&o.noTTL, "no-ttl", false, "only keys that never expire (the locks a crashed holder leaves stuck)")
		}, false)

	get := s.command(o, "get KEY [--json]", "show one lock: owner, TTL, type and holder record",
		`Show one key under the namespace: its owner, time to live, Redis type, and the holder record
that locktui's clients (the Go provider, the bridge, locktui acquire and run) write beside each
lock they take. A lock taken by stock Medusa has no record. A key of another Redis type is
shown with its type and no owner. Exits 3 when the key does not exist.

--json prints one JSON object: {"key", "redis_key", "exists", "type", "lock", "owner",
"ttl_ms", "record"}; ttl_ms is -1 for a key that never expires, record is null when there is
none, else {"key", "owner", "claim", "expire_at_ms", "reentered", "current", "fields"}.`,
		runGet, func(fs *pflag.FlagSet) {
			fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
		}, true)
	getKeys := get.ValidArgsFunction
	get.ValidArgsFunction = func(c *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp // get takes one KEY
		}
		return getKeys(c, args, typed)
	}

	acquire := s.command(o, "acquire KEY... --owner OWNER [--expire D] [--wait D]",
		"take locks that stay held after locktui exits",
		`Take every KEY for OWNER, with stock Medusa acquire semantics: an owner re-enters its own
lock (and rewrites its TTL); "*" is the anonymous owner, which never re-enters. The locks stay
held after locktui exits; give them back with locktui release. If any key cannot be taken,
the keys this call took are given back and it exits 3 with
Failed to acquire lock for key "KEY" (held by "OWNER").

A Redis that cannot be reached (a failover, a restart) is retried for 5s, or within --wait,
after one line on stderr; if it still cannot be reached then, acquire says so and exits 1.`,
		runAcquire, func(fs *pflag.FlagSet) {
			fs.StringVar(&o.owner, "owner", "", "owner id to hold the locks (required; \"*\" for the anonymous owner)")
			fs.Var(durationFlag{&o.expire}, "expire", "time to live `D`, whole seconds rounded up. Without it the lock never expires, as in stock Medusa, and locktui warns; --expire 0 asks for that without the warning")
			fs.Var(durationFlag{&o.wait}, "wait", "wait up to `D` for held keys instead of failing at once (AwaitQueue)")
		}, true)

	release := s.command(o, "release KEY... (--owner OWNER | --force) [--now] [--wait D]",
		"release locks of an owner, or whoever holds them",
		`Release every KEY. With --owner, only keys OWNER holds are released (owner-checked, as stock
release). With --force, each key is released whoever holds it now (compare-and-delete, so a
key that changes hands in between is not released blindly) and the owner it had is printed.

A key held by a live lease of locktui's (Execute, a bridge client's execute or lease, locktui
run) is not deleted under its holder: the holder is told first (its lease ends at once: the
job's ctx is cancelled, the bridge client's AbortSignal aborts, run stops its command), and
the key is freed when the holder releases it, or at the latest when its TTL runs out. release
prints when the holder was told and waits, up to --wait (default: until then), for the key to
be freed, and prints when. Any other hold (stock Medusa's, a plain acquire's, a lease that
stopped renewing) cannot be told and is freed at once. --now frees every key at once whatever
holds it: the holder may still be inside.
Exits 0 when every key was released (or its holder told), 3 when some key was not (not held,
another owner's, or not a lock).

Each key is audited (see the audit flags) with its result (released, holder_told, not_held or
error) and mode (tell_first, free_now): --force as force_release_any with the owner the key
had, --owner as force_release (the owner-checked release the console's d does) with OWNER; a
key whose holder was told gets a second record, freed, when it is freed.`,
		runRelease, func(fs *pflag.FlagSet) {
			fs.StringVar(&o.owner, "owner", "", "release only the locks `OWNER` holds (\"*\" for the anonymous owner)")
			fs.BoolVar(&o.force, "force", false, "release whoever holds each key (--force=false, not --force false)")
			fs.BoolVar(&o.now, "now", false, "free the keys at once, without telling a lease's holder first")
			fs.Var(durationFlag{&o.wait}, "wait", "after telling a holder, wait up to `D` for the key to be freed (default: until it is; 0: do not wait)")
			o.auditFlags(fs)
		}, true)
	release.Annotations[annotationAudited] = "true"

	releaseAll := s.command(o, "release-all --owner OWNER", "release every lock of one owner",
		`Release every lock in the namespace held by OWNER and print how many were released (0 is
not an error). --owner is required: locktui does not guess ("*" releases the anonymous
owner's locks only, as stock releaseAll without an owner does). It is audited (see the audit
flags) as a release_owner record with OWNER, the count, and each lock released with the
holder it cut off (the holder record read just before the delete, in the same walk); past
1,000 locks, as several records of 1,000 (part 1, 2, ...), the last with the outcome and
the count of all.

A key a live lease of locktui's holds is not deleted under its holder: the holder is told first
and releases it (see release); the count includes those keys, and the line says how many. --now
frees every key at once.

The namespace is walked as list walks it, paced to 20,000 keys examined a second: each key is
read, then the keys OWNER holds are deleted with a compare-and-unlink each (one unit each), so
release-all never loads Redis with a burst; on a database of 1,000,000 keys it takes about 50
seconds.`,
		runReleaseAll, func(fs *pflag.FlagSet) {
			fs.StringVar(&o.owner, "owner", "", "the `OWNER` whose locks to release (required)")
			fs.BoolVar(&o.now, "now", false, "free the keys at once, without telling the holders of live leases first")
			o.auditFlags(fs)
		}, false)
	releaseAll.Annotations[annotationAudited] = "true"

	run := s.command(o, "run KEY... [--timeout D] [--expire D] [--grace D] [--conflict-exit-code N] [--fair-queue] -- COMMAND [ARG...]",
		"run a command while holding locks, like flock(1)", runHelp, runRun, func(fs *pflag.FlagSet) {
			o.timeout, o.leaseExpire, o.grace, o.conflictExit = defaultRunTimeout, defaultRunExpire, defaultRunGrace, ExitTimedOut
			fs.Var(durationFlag{&o.timeout}, "timeout", "wait up to `D` for the keys; 0 tries once and fails at once if a key is held (flock -n)")
			fs.Var(durationFlag{&o.leaseExpire}, "expire", "take a lease of `D`, renewed every max(D/3, 250ms)")
			fs.Var(durationFlag{&o.grace}, "grace", "wait `D` between SIGTERM and SIGKILL; at most a quarter of --expire, so that a late renewal does not stop the command (default 10s, or a quarter of --expire if that is less)")
			fs.Var(exitCodeFlag{&o.conflictExit}, "conflict-exit-code", "exit with `N` when the keys could not be taken: held past --timeout, or held at all with --timeout 0 (flock -E)")
			fs.BoolVar(&o.fairQueue, "fair-queue", false, "wait in the keys' fair queue, first come first served with every other client that has it on (Go services with FairQueue, a bridge started with --fair-queue)")
			fs.Lookup("grace").DefValue = "" // the default depends on --expire; the usage says it
		}, true)

	demo := s.command(o, "demo [console flags]", "open the console on a built-in demo (no Redis needed)",
		`Open the interactive console on an embedded Redis with simulated workers.`,
		runDemo, o.consoleFlags, false)
	demo.Annotations[annotationConsole] = "true"

	version := s.command(o, "version", "print the version, VCS revision and build time",
		`Print locktui's module version, the VCS revision and commit time it was built from, and the
Go version, from the build information in the binary. A binary built from a checkout without
version stamping says (devel); a revision or time the build did not record says unknown.`,
		runVersion, nil, false)

	return []*cobra.Command{list, get, acquire, release, releaseAll, run, demo, version}
}

const runHelp = `Take every KEY as a lease under a fresh owner "execute:<uuid>" (as stock execute does), run
COMMAND with locktui's stdin, stdout and stderr, renew the lease while it runs, and release
it when the command exits. SIGINT, SIGTERM and SIGHUP are forwarded to the command.

If the keys are not all taken within --timeout, locktui exits 75 (or --conflict-exit-code)
with "Timed-out acquiring lock." and the key it waited for and who holds it; the command
does not run. --timeout 0 makes one attempt and fails at once if a key is held.

A Redis that cannot be reached (a failover, a restart) is retried within --timeout (for 5s
with --timeout 0), after one line on stderr; if it still cannot be reached then, locktui says
so and exits 1.

The command never runs on when Redis could expire the keys. The lease's deadline is 0.9 of the
TTL after the send time of its last confirmed renewal; when it is --grace away and no renewal
has moved it, the command gets SIGTERM, and SIGKILL at the deadline if it still runs (a renewal
confirmed later does not take the SIGTERM back). If the lease is lost, locktui says why (the
key was deleted, taken by another owner, or expired because renewals failed), and the command
gets SIGTERM, then SIGKILL after --grace, or at the deadline if that comes first. Either way
locktui exits 76.

On Linux, if locktui itself dies (kill -9, the OOM killer), the kernel kills the command with
SIGKILL, so it cannot run on without the lock. This covers the command's own process only:
processes it starts (sh -c 'a; b' starts a) survive, and so does a set-user-ID command. On
other systems the command keeps running in that case, without the lock once the lease expires.

The command's environment names the lease: LOCKTUI_LOCK_KEYS the keys (sorted, one a line),
LOCKTUI_FENCING_TOKENS each key's fencing token (one a line, in that order) and
LOCKTUI_FENCING_TOKEN the first key's. Pass the token with every write to a store that checks
it, so that a write made after the lease was lost is refused (docs/fencing.md).

Exits with the command's exit code, 128+N if a signal N killed it, 127 if it was not found
(the lock is not taken), 126 if it could not be started.`
