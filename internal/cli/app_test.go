package cli_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/redisconn"
)

func TestHelpGoesToStdoutAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"--redis", "redis://x:1", "--help"}} {
		r := run(t, args...)
		requireCode(t, r, cli.ExitOK)
		require.Empty(t, r.stderr, "args %q", args)
		require.Contains(t, r.stdout, "Usage:", "args %q", args)
		require.Contains(t, r.stdout, "Exit codes:", "args %q", args)
		require.Contains(t, r.stdout, "76     run: the lease was lost", "args %q", args)
	}
}

func TestCommandHelp(t *testing.T) {
	for _, args := range [][]string{
		{"list", "--help"}, {"acquire", "k", "-h"}, {"help", "release"}, {"release-all", "-help"},
		{"run", "--help"}, {"demo", "--help"}, {"version", "--help"}, {"get", "--help"}, {"help", "get"},
		{"completion", "--help"}, {"completion", "bash", "--help"}, {"help", "completion", "zsh"},
	} {
		r := run(t, args...)
		requireCode(t, r, cli.ExitOK)
		require.Empty(t, r.stderr)
		cmd := strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool {
			return a == "help" || strings.HasPrefix(a, "-") || a == "k"
		}), " ")
		require.True(t, strings.HasPrefix(r.stdout, "Usage: locktui "+cmd), "help of %q: %q", args, r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"lst"}, []string{`unknown command "lst"`}},
		{[]string{"help", "lst"}, []string{`unknown command "lst"`}},
		{[]string{"--bogus", "list"}, []string{"unknown flag --bogus"}},
		{[]string{"list", "--bogus=1"}, []string{"unknown flag --bogus"}},
		{[]string{"list", "extra"}, []string{"list takes no arguments"}},
		{[]string{"list", "--redis"}, []string{"flag --redis needs a value"}},
		{[]string{"--read-only", "list"}, []string{"--read-only applies only to the console"}},
		{[]string{"list", "--read-only"}, []string{"unknown flag --read-only"}},
		{[]string{"--audit-log", "a.log", "list"}, []string{"--audit-log applies only to the console, demo, release and release-all, not to list"}},
		{[]string{"acquire", "k", "--owner", "o", "--audit-stream", "s"}, []string{"unknown flag --audit-stream"}},
		{[]string{"--audit-stream", "s", "run", "k", "--", "true"}, []string{"--audit-stream applies only to", "not to run"}},
		{[]string{"--refresh", "2s", "release", "k", "--force"}, []string{"--refresh applies only to the console and demo, not to release"}},
		{[]string{"acquire", "k", "--owner", "o", "--expire", "5x"}, []string{`invalid value "5x" for --expire`, "not a duration"}},
		{[]string{"acquire", "k", "--owner", "o", "--wait=-1s"}, []string{"--wait", "must not be negative"}},
		{[]string{"acquire", "k"}, []string{"acquire needs --owner OWNER"}},
		{[]string{"acquire", "k", "--owner="}, []string{"--owner is empty"}},
		{[]string{"acquire", "--owner", "o"}, []string{"acquire needs at least one KEY"}},
		{[]string{"acquire", "", "--owner", "o"}, []string{"empty KEY"}},
		{[]string{"release", "k"}, []string{"release needs --owner OWNER or --force"}},
		{[]string{"release", "k", "--owner", "o", "--force"}, []string{"either --owner or --force"}},
		{[]string{"release-all"}, []string{"release-all needs --owner"}},
		{[]string{"release-all", "k", "--owner", "o"}, []string{"release-all takes no KEY"}},
		{[]string{"run", "k", "true"}, []string{"run needs -- COMMAND"}},
		{[]string{"run", "k", "--"}, []string{"run needs -- COMMAND"}},
		{[]string{"run", "--", "true"}, []string{"run needs at least one KEY"}},
		{[]string{"run", "k", "--conflict-exit-code", "256", "--", "true"}, []string{`invalid value "256" for --conflict-exit-code`, "0 to 255"}},
		{[]string{"run", "k", "--conflict-exit-code=-1", "--", "true"}, []string{`invalid value "-1" for --conflict-exit-code`}},
		{[]string{"run", "k", "--timeout=-1s", "--", "true"}, []string{"--timeout", "must not be negative"}},
		{[]string{"lsit"}, []string{`unknown command "lsit" (did you mean "list"?)`}},
		{[]string{"get"}, []string{"get needs exactly one KEY"}},
		{[]string{"get", "a", "b"}, []string{"get needs exactly one KEY, got 2"}},
		{[]string{"get", ""}, []string{"empty KEY"}},
		{[]string{"get", "k", "--owner", "o"}, []string{"unknown flag --owner"}},
		{[]string{"list", "--owner="}, []string{"--owner is empty"}},
		{[]string{"list", "--match"}, []string{"flag --match needs a value"}},
		{[]string{"list", "--no-ttl", "true"}, []string{"--no-ttl takes no separate value"}},
		{[]string{"list", "-x"}, []string{"unknown flag -x"}},
		{[]string{"completion", "ksh"}, []string{`no completion for "ksh"`}},
		{[]string{"run", "k", "--expire=0", "--", "true"}, []string{"--expire must be positive"}},
		{[]string{"list", "--namespace="}, []string{"--namespace is empty"}},
		{[]string{"list", "--redis="}, []string{"--redis is empty"}},
		{[]string{"list", "--tls-ca", "ca.pem"}, []string{"need a rediss:// URL"}},
		{[]string{"list", "--redis", "rediss://h:1", "--tls-cert", "c.pem"}, []string{"--tls-cert and --tls-key go together"}},
		{[]string{"--refresh", "0"}, []string{"--refresh must be positive"}},
		{[]string{"demo"}, []string{"demo is not available"}},
		{[]string{"version", "x"}, []string{"version takes no arguments"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			app := newApp(nil, nil)
			app.Console = func(context.Context, cli.ConsoleConfig) error { return nil }
			r := runApp(t, app, tt.args...)
			requireCode(t, r, cli.ExitUsage)
			require.Empty(t, r.stdout)
			requireOneErrorLine(t, r, tt.want...)
		})
	}
}

func TestNoCommandWithoutConsolePrintsUsage(t *testing.T) {
	r := run(t)
	requireCode(t, r, cli.ExitUsage)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "Usage:")
}

func TestConsoleGetsParsedFlags(t *testing.T) {
	var got []cli.ConsoleConfig
	app := newApp(nil, nil)
	app.Getenv = func(name string) string {
		if name == "REDIS_URL" {
			return "redis://from-env:6390"
		}
		return ""
	}
	app.Console = func(_ context.Context, cfg cli.ConsoleConfig) error {
		got = append(got, cfg)
		return nil
	}
	app.Demo = func(_ context.Context, cfg cli.ConsoleConfig) error {
		got = append(got, cfg)
		return errors.New("demo broke")
	}

	requireCode(t, runApp(t, app), cli.ExitOK)
	requireCode(t, runApp(t, app, "--read-only", "--refresh=250ms", "--audit-log", "a.log",
		"--audit-stream", "audit", "--namespace", "ns:", "--redis", "rediss://h:6390",
		"--tls-ca", "ca.pem", "--tls-cert=c.pem", "--tls-key", "k.pem"), cli.ExitOK)
	r := runApp(t, app, "demo", "--refresh", "2", "--read-only")
	requireCode(t, r, cli.ExitError)
	requireOneErrorLine(t, r, "demo broke")

	require.Equal(t, []cli.ConsoleConfig{
		{URL: "redis://from-env:6390", Namespace: "medusa_lock:", Refresh: time.Second},
		{URL: "rediss://h:6390", Namespace: "ns:", ReadOnly: true, AuditLog: "a.log", AuditStream: "audit",
			Refresh: 250 * time.Millisecond, TLS: redisconn.TLSFiles{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}},
		{URL: "redis://from-env:6390", Namespace: "medusa_lock:", ReadOnly: true, Refresh: 2 * time.Second},
	}, got)
}

func TestConsoleConfigOpen(t *testing.T) {
	client, err := cli.ConsoleConfig{URL: "redis://127.0.0.1:1"}.Open()
	require.NoError(t, err)
	require.NoError(t, client.Close())
	_, err = cli.ConsoleConfig{URL: "http://x"}.Open()
	require.ErrorIs(t, err, redisconn.ErrBadURL)
}

func TestVersion(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tt := range []struct {
		name    string
		version string
		info    *debug.BuildInfo
		want    string
	}{
		{"stamped", "", stamped, "locktui v1.2.3\nrevision: 0123456789abcdef0123456789abcdef01234567 (modified)\ntime:     2026-11-30T12:00:00Z\ngo:       go1.26.7\n"},
		{"override", "v9.9.9", stamped, "locktui v9.9.9\nrevision: 0123456789abcdef0123456789abcdef01234567 (modified)\ntime:     2026-11-30T12:00:00Z\ngo:       go1.26.7\n"},
		{"checkout without vcs", "", &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "(devel)"}},
			"locktui (devel)\nrevision: unknown\ntime:     unknown\ngo:       go1.26.7\n"},
		{"no build info", "", nil, "locktui (devel)\nrevision: unknown\ntime:     unknown\ngo:       " + runtime.Version() + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app := newApp(nil, nil)
			app.Version = tt.version
			app.BuildInfo = func() (*debug.BuildInfo, bool) { return tt.info, tt.info != nil }
			for _, args := range [][]string{{"version"}, {"--version"}} {
				r := runApp(t, app, args...)
				requireCode(t, r, cli.ExitOK)
				require.Empty(t, r.stderr)
				require.Equal(t, tt.want, r.stdout, "locktui %s", args[0])
			}
		})
	}
}

// The completion scripts come from cobra; each names locktui and can be sourced.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for locktui", "zsh": "#compdef locktui",
		"fish": "# fish completion for locktui", "powershell": "# powershell completion for locktui",
	} {
		r := run(t, "completion", shell)
		requireCode(t, r, cli.ExitOK)
		require.Empty(t, r.stderr)
		require.True(t, strings.HasPrefix(r.stdout, want), "completion %s: %.80q", shell, r.stdout)
	}
}

// A Redis that cannot be reached is not one line: the commands retry it first (see
// TestCommandsThatDoNotWaitRetryBrieflyThenFail).
func TestRuntimeErrorsAreOneLine(t *testing.T) {
	srv := newEnv(t).srv
	srv.Stop() // a port nobody listens on any more
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"list", "--redis", "http://localhost"}, []string{"bad Redis URL", "redis:// or rediss://"}},
		{[]string{"list", "--redis", "rediss://" + srv.Addr, "--tls-ca", "/nonexistent/ca.pem"}, []string{"TLS CA"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := run(t, tt.args...)
			requireCode(t, r, cli.ExitError)
			require.Empty(t, r.stdout)
			requireOneErrorLine(t, r, tt.want...)
			require.NotContains(t, r.stderr, "secret")
		})
	}
}

func TestBadURLNeverShowsThePassword(t *testing.T) {
	for _, url := range []string{
		"redis://user:hunter2@host:notaport",
		"redis://user:hun/ter2@host:6379",
		"user:hunter2@host:6379",
		"redis://s1:26379/0?master_name=m&password=hunter2&addr=bad",
	} {
		t.Run(url, func(t *testing.T) {
			r := run(t, "list", "--redis", url)
			requireCode(t, r, cli.ExitError)
			requireOneErrorLine(t, r, "bad Redis URL")
			require.NotContains(t, r.stderr, "hun")

			app := newApp(nil, nil)
			app.Getenv = func(name string) string { return map[string]string{"REDIS_URL": url}[name] }
			r = runApp(t, app, "acquire", "k", "--owner", "o")
			requireCode(t, r, cli.ExitError)
			requireOneErrorLine(t, r, "bad Redis URL")
			require.NotContains(t, r.stderr, "hun")
		})
	}
}
