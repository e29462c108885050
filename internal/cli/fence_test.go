package cli_test

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/provider"
)

// run's command gets the lease's keys and fencing tokens in its environment; the holder record
// names locktui as a cli client.
func TestRunGivesTheCommandItsFencingToken(t *testing.T) {
	e := newEnv(t)
	stdin, feed := io.Pipe()
	app := newApp(nil, nil)
	app.Stdin = stdin
	stdout, _, code := started(t, app, "run", "k2", "k1", "--redis", e.srv.URL, "--",
		"sh", "-c", `printf '%s|%s|%s\n' "$LOCKTUI_FENCING_TOKEN" "$LOCKTUI_LOCK_KEYS" "$LOCKTUI_FENCING_TOKENS"; echo ready; read line; exit 0`)

	locks, _, err := e.ops.Read(context.Background(), []string{"k1", "k2"})
	require.NoError(t, err)
	require.Len(t, locks, 2)
	require.Equal(t, provider.ClientCLI, locks[0].Record.Client)
	t1, t2 := strconv.FormatInt(locks[0].Record.FencingToken, 10), strconv.FormatInt(locks[1].Record.FencingToken, 10)
	line, _, _ := strings.Cut(stdout.String(), "\n"+"ready")
	require.Equal(t, t1+"|k1\nk2|"+t1+"\n"+t2, line)

	require.NoError(t, feed.Close())
	require.Equal(t, 0, <-code)
}

// get shows who holds a lock taken by our clients, since when and its fencing token.
func TestGetShowsTheHolder(t *testing.T) {
	e := newEnv(t)
	tokens, err := e.p.AcquireTokens(context.Background(), []string{"k"}, provider.AcquireOptions{Owner: "o"})
	require.NoError(t, err)
	r := run(t, "get", "k", "--redis", e.srv.URL)
	requireCode(t, r, 0)
	require.Regexp(t, `(?m)^  holder: +\S+ \(pid `+strconv.Itoa(os.Getpid())+` on .+, go client\)$`, r.stdout)
	require.Regexp(t, `(?m)^  acquired: +\S+Z \(Redis time\)$`, r.stdout)
	require.Regexp(t, `(?m)^  fencing: +`+strconv.FormatInt(tokens["k"], 10)+`$`, r.stdout)
	require.NotContains(t, r.stdout, "  prog:", "the fields shown above are not repeated raw")
}

// run --help tells where the command finds its keys and fencing tokens.
func TestRunHelpNamesTheFencingEnvironment(t *testing.T) {
	r := run(t, "run", "--help")
	for _, name := range []string{cli.EnvLockKeys, cli.EnvFencingTokens, cli.EnvFencingToken, "docs/fencing.md"} {
		require.Contains(t, r.stdout, name)
	}
}
