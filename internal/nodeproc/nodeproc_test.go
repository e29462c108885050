package nodeproc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/nodeproc"
)

// childEnv makes the test binary a child that speaks lines (see child).
const childEnv = "NODEPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	goleak.VerifyTestMain(m)
}

// child answers each line of stdin with "got <line>" and a blank line, until stdin ends; mode
// "flood" first writes 10,000 lines, "deaf" never reads stdin and sleeps.
func child(mode string) int {
	switch mode {
	case "flood":
		for i := range 10000 {
			fmt.Printf("line %d\n", i)
		}
	case "deaf":
		time.Sleep(time.Hour)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Printf("got %s\n\n", sc.Text())
	}
	return 0
}

// start runs the test binary as a child in mode.
func start(t *testing.T, mode string) *nodeproc.Process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	p, err := nodeproc.Start(cmd)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	return p
}

func TestProcessAnswersLineByLineUntilItsInputEnds(t *testing.T) {
	p := start(t, "echo")
	for _, req := range []string{"a", `{"id":1}`} {
		require.NoError(t, p.Send([]byte(req)))
		line, err := p.Next(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "got "+req, string(line), "the blank line is skipped, the line end dropped")
	}
	require.NoError(t, p.CloseInput())
	_, err := p.Next(t.Context())
	require.ErrorIs(t, err, nodeproc.ErrExited)
	<-p.Exited()
	assert.NoError(t, p.Err())
	assert.Error(t, p.Send([]byte("late")), "stdin is closed")
}

func TestNextEndsWithItsContext(t *testing.T) {
	p := start(t, "echo")
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	_, err := p.Next(ctx)
	require.ErrorIs(t, err, cause)
}

// The child's stdout is read whether or not anyone asks for it: a child that writes more than
// a pipe holds still exits, and the lines wait for Next.
func TestStdoutIsReadWithoutNext(t *testing.T) {
	p := start(t, "flood")
	require.NoError(t, p.CloseInput())
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not exit: its stdout is not read")
	}
	n := 0
	for {
		line, err := p.Next(t.Context())
		if errors.Is(err, nodeproc.ErrExited) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("line %d", n), string(line))
		n++
	}
	assert.Equal(t, 10000, n)
}

func TestStopKillsAChildThatDoesNotExit(t *testing.T) {
	p := start(t, "deaf")
	began := time.Now()
	err := p.Stop(100 * time.Millisecond)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "killed")
	assert.Less(t, time.Since(began), 10*time.Second)
}

func TestCommandRunsTheScriptInCompat(t *testing.T) {
	compat := t.TempDir()
	cmd, err := nodeproc.Command(compat, "bench/x.js", "--serve")
	require.NoError(t, err)
	node, err := nodeproc.LookPath()
	require.NoError(t, err)
	assert.Equal(t, node, cmd.Path)
	assert.Equal(t, []string{node, filepath.FromSlash("bench/x.js"), "--serve"}, cmd.Args)
	assert.Equal(t, compat, cmd.Dir)
}

func TestFindCompatDirWalksUpToTheModule(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "compat"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	_, err := nodeproc.FindCompatDir(deep)
	require.ErrorContains(t, err, "no compat/package.json next to a go.mod")

	require.NoError(t, os.WriteFile(filepath.Join(root, "compat", "package.json"), []byte("{}"), 0o644))
	got, err := nodeproc.FindCompatDir(deep)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "compat"), got)

	here, err := nodeproc.FindCompatDir(".")
	require.NoError(t, err, "this repository")
	assert.True(t, strings.HasSuffix(here, string(filepath.Separator)+"compat"), here)
}

func TestCheckDepsNamesTheMissingPackage(t *testing.T) {
	compat := t.TempDir()
	pkg := filepath.Join(compat, "node_modules", "@medusajs", "locking-redis")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "package.json"), []byte("{}"), 0o644))
	require.NoError(t, nodeproc.CheckDeps(compat, "@medusajs/locking-redis"))

	err := nodeproc.CheckDeps(compat, "@medusajs/locking-redis", "ioredis")
	require.ErrorIs(t, err, nodeproc.ErrDeps)
	assert.Equal(t, "ioredis is not installed in "+filepath.Join(compat, "node_modules")+": "+nodeproc.DepsHint, err.Error())
}
