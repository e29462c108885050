package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// command is one locktui subcommand.
type command struct {
	name     string
	synopsis string // the usage line after "locktui "
	summary  string // one line for the command list
	help     string // the command's own help: description and flags
	console  bool   // accepts the console flags
	audited  bool   // accepts the audit flags (--audit-log, --audit-stream) and writes the trail
	flags    func(fs *flag.FlagSet, o *options)
	run      func(ctx context.Context, s *session, o *options, p parsedArgs) int
}

// commands are the subcommands in the order the usage lists them. A function, not a variable,
// so the table holds no state between runs.
func commands() []*command {
	return []*command{
		{
			name: "list", synopsis: "list [--json]", summary: "list every lock in the namespace",
			help: `List every key under the namespace, sorted by key: its owner and time to live.
Keys under the namespace that are not locks (another Redis type) are marked foreign.

  --json   print one JSON array of {"key", "redis_key", "owner", "ttl_ms"} objects
           (key without the namespace; ttl_ms -1 for a lock that never expires; foreign keys
           have "foreign": true and owner ""); [] when there are none`,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.BoolVar(&o.json, "json", false, "JSON output")
			},
			run: runList,
		},
		{
			name: "acquire", synopsis: "acquire KEY... --owner OWNER [--expire D] [--wait D]",
			summary: "take locks that stay held after locktui exits",
			help: `Take every KEY for OWNER, with stock Medusa acquire semantics: an owner re-enters its own
lock (and rewrites its TTL); "*" is the anonymous owner, which never re-enters. The locks stay
held after locktui exits; give them back with locktui release. If any key cannot be taken,
the keys this call took are given back and it exits 3 with
Failed to acquire lock for key "KEY".

  --owner OWNER   owner id to hold the locks (required; "*" for the anonymous owner)
  --expire D      time to live (whole seconds, rounded up). Without it the lock never
                  expires, as in stock Medusa, and locktui warns; --expire 0 asks for that
                  without the warning
  --wait D        wait up to D for held keys instead of failing at once (AwaitQueue)`,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.StringVar(&o.owner, "owner", "", "owner")
				fs.Var(durationFlag{&o.expire}, "expire", "TTL")
				fs.Var(durationFlag{&o.wait}, "wait", "wait")
			},
			run: runAcquire,
		},
		{
			name: "release", synopsis: "release KEY... (--owner OWNER | --force)",
			summary: "release locks of an owner, or whoever holds them",
			help: `Release every KEY. With --owner, only keys OWNER holds are deleted (owner-checked, as stock
release). With --force, each key is deleted whoever holds it now (compare-and-delete, so a key
that changes hands in between is not deleted blindly) and the owner it had is printed.
Exits 0 when every key was released, 3 when some key was not (not held, another owner's, or
not a lock).

Each key is audited (see Audit flags) with its result (released, not_held or error):
--force as force_release_any with the owner the key had, --owner as force_release (the
owner-checked delete the console's d does) with OWNER.

  --owner OWNER   release only OWNER's locks ("*" for the anonymous owner)
  --force         release whoever holds each key (--force=false: not --force false)`,
			audited: true,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.StringVar(&o.owner, "owner", "", "owner")
				fs.BoolVar(&o.force, "force", false, "any owner")
			},
			run: runRelease,
		},
		{
			name: "release-all", synopsis: "release-all --owner OWNER",
			summary: "release every lock of one owner",
			help: `Release every lock in the namespace held by OWNER and print how many were released (0 is
not an error). --owner is required: locktui does not guess ("*" releases the anonymous
owner's locks only, as stock releaseAll without an owner does). It is audited (see Audit
flags) as one release_owner record with OWNER and the count.

  --owner OWNER   the owner whose locks to release`,
			audited: true,
			flags: func(fs *flag.FlagSet, o *options) {
				fs.StringVar(&o.owner, "owner", "", "owner")
			},
			run: runReleaseAll,
		},
		{
			name: "run", synopsis: "run KEY... [--timeout D] [--expire D] [--grace D] -- COMMAND [ARG...]",
			summary: "run a command while holding locks, like flock(1)",
			help: `Take every KEY as a lease under a fresh owner "execute:<uuid>" (as stock execute does), run
COMMAND with locktui's stdin, stdout and stderr, renew the lease while it runs, and release
it when the command exits. SIGINT, SIGTERM and SIGHUP are forwarded to the command.

The command never runs on when Redis could expire the keys. The lease's deadline is 0.9 of the
TTL after the send time of its last confirmed renewal; when it is --grace away and no renewal
has moved it, the command gets SIGTERM, and SIGKILL at the deadline if it still runs (a renewal
confirmed later does not take the SIGTERM back). If the lease is lost (a key was deleted or
changed owner), the command gets SIGTERM, then SIGKILL after --grace, or at the deadline if
that comes first. Either way locktui exits 76.

On Linux, if locktui itself dies (kill -9, the OOM killer), the kernel kills the command with
SIGKILL, so it cannot run on without the lock. This covers the command's own process only:
processes it starts (sh -c 'a; b' starts a) survive, and so does a set-user-ID command. On
other systems the command keeps running in that case, without the lock once the lease expires.

  --timeout D   how long to wait for the keys (default 5s); then exit 75 with
                Timed-out acquiring lock.
  --expire D    the lease, renewed every max(D/3, 250ms) (default 60s)
  --grace D     time between SIGTERM and SIGKILL; at most a quarter of --expire, so that
                a late renewal does not stop the command (default 10s, or a quarter
                of --expire if that is less)

Exits with the command's exit code, 128+N if a signal N killed it, 127 if it was not found
(the lock is not taken), 126 if it could not be started.`,
			flags: func(fs *flag.FlagSet, o *options) {
				o.timeout, o.expire, o.grace = defaultRunTimeout, defaultRunExpire, defaultRunGrace
				fs.Var(durationFlag{&o.timeout}, "timeout", "wait")
				fs.Var(durationFlag{&o.expire}, "expire", "lease")
				fs.Var(durationFlag{&o.grace}, "grace", "grace")
			},
			run: runRun,
		},
		{
			name: "demo", synopsis: "demo [console flags]", console: true,
			summary: "open the console on a built-in demo (no Redis needed)",
			help:    `Open the interactive console on an embedded Redis with simulated workers.`,
			run:     runDemo,
		},
		{
			name: "version", synopsis: "version", summary: "print the version",
			help: `Print locktui's version.`,
			run:  runVersion,
		},
	}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

const usageHead = `locktui inspects and manages Medusa locks in Redis (compatible with @medusajs/locking-redis).

Usage:
  locktui [global flags] [console flags]   open the interactive console
`

const globalHelp = `Global flags:
  --redis URL        Redis server (default $REDIS_URL, else redis://localhost:6379);
                     rediss:// for TLS, ?master_name=NAME for Sentinel, ?cluster=true for Cluster
  --namespace NS     key prefix (default "medusa_lock:")
  --tls-ca FILE      CA bundle that signed the server certificate (rediss://)
  --tls-cert FILE    client certificate for mutual TLS, with --tls-key
  --tls-key FILE     client key for mutual TLS
`

const consoleHelp = `Console flags (the console and demo; they take the audit flags too):
  --read-only        show locks, change nothing (and audit nothing)
  --refresh D        how often to re-read the locks (default 1s)
`

const auditHelp = `Audit flags (the console, demo, release and release-all): every change to a lock is recorded
(time, operator user@host, action, key, owner, result, count):
  --audit-log PATH   in the file PATH (default $XDG_STATE_HOME/locktui/audit.jsonl, else
                     ~/.local/state/locktui/audit.jsonl)
  --audit-stream S   and in the Redis stream S
If the trail cannot be opened, nothing is changed (exit 1). A record that cannot be written
after the change is a warning on stderr; the exit code still tells what happened to the locks.
`

const flagsHelp = `Flags go before or after the command and between its arguments, as --flag value or
--flag=value; -- ends the flags. Boolean flags take no separate value: --force=false, not
--force false. D is a duration such as 500ms, 30s, 5m, or seconds as a number.
`

const exitHelp = `Exit codes:
  0      success
  1      error: bad Redis URL or TLS files, Redis unreachable, Redis error, audit log unusable
  2      usage error: unknown command or flag, missing argument, bad value
  3      acquire: a key is held by another owner; release: not every key was released (not
         held, another owner's, or not a lock)
  75     run: timed out waiting for the lock
  76     run: the lease was lost, or its renewal overdue, while the command ran
  126    run: the command could not be started
  127    run: the command was not found
  128+N  run: the command was killed by signal N; acquire --wait or run: interrupted by signal N
  other  run: the command's exit code
`

// printUsage writes the main usage.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	for _, c := range commands() {
		fmt.Fprintf(w, "  locktui %s\n", c.synopsis)
	}
	fmt.Fprint(w, "\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\n"+globalHelp+"\n"+consoleHelp+"\n"+auditHelp+"\n"+flagsHelp+"\n"+exitHelp+"\n")
	fmt.Fprint(w, "Run 'locktui COMMAND --help' for a command's details.\n")
}

// printCommandUsage writes one command's usage.
func printCommandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: locktui %s\n\n%s\n\n%s", c.synopsis, c.help, globalHelp)
	if c.console {
		fmt.Fprint(w, "\n"+consoleHelp)
	}
	if c.console || c.audited {
		fmt.Fprint(w, "\n"+auditHelp)
	}
	fmt.Fprint(w, "\n"+flagsHelp+"\n"+exitHelp)
}
