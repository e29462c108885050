//go:build unix

package e2e

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// fencedSetLua is the storage side of docs/fencing.md's example: a write that carries a fencing
// token, refused when a write with a higher token already happened (KEYS[1] the data, KEYS[2]
// its fence; ARGV[1] the token, ARGV[2] the value). Returns 1 when written, 0 when refused.
//
//go:embed testdata/fenced-set.lua
var fencedSetLua string

var fencedSet = redis.NewScript(fencedSetLua)

// The keys of the fenced-write helper: the lock and the data it guards.
const (
	fencedLock  = "e2e:fenced"
	fencedData  = "e2e:data:fenced"
	fencedFence = "e2e:data:fenced:fence"
	// fencedTTL is the helpers' lease: short, so a stopped holder loses it quickly.
	fencedTTL = 2 * time.Second
)

// A holder stopped with SIGSTOP past its TTL loses the lock to another process, which writes
// under its higher token; the first resumes, still believing (it checked its lease before the
// pause), and its write is refused by the storage's check of the token.
func TestFencingTokenRefusesAPausedHoldersWrite(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	c := t.Context()
	first := startFencedWriter(t, srv.URL, "first")
	firstToken := first.token(t)

	first.proc.signal(syscall.SIGSTOP) // its renewals stop with it
	require.Eventually(t, func() bool { return rdb.Exists(c, provider.DefaultNamespace+fencedLock).Val() == 0 },
		3*fencedTTL, 20*time.Millisecond, "the stopped holder's lock expires")

	second := startFencedWriter(t, srv.URL, "second")
	secondToken := second.token(t)
	require.Greater(t, secondToken, firstToken)
	require.Equal(t, "wrote", second.write(t))

	first.proc.signal(syscall.SIGCONT)
	require.Equal(t, "refused", first.write(t), "the paused holder's stale token is refused")
	require.Equal(t, "second", rdb.Get(c, fencedData).Val())
	require.Equal(t, strconv.FormatInt(secondToken, 10), rdb.Get(c, fencedFence).Val())
}

// fencedWriter is a running fenced-write helper.
type fencedWriter struct {
	proc  *proc
	stdin io.WriteCloser
	lines chan string
}

// startFencedWriter starts this test binary as the fenced-write helper named name.
func startFencedWriter(t *testing.T, redisURL, name string) *fencedWriter {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=fenced-write", helperRedisEnv+"="+redisURL, helperNameEnv+"="+name)
	w := &fencedWriter{lines: make(chan string, 4)}
	w.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	w.proc = startProc(t, name, cmd, procOptions{onStdout: func(line string) { w.lines <- line }})
	return w
}

// next returns the helper's next line of output.
func (w *fencedWriter) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-w.lines:
		return line
	case <-w.proc.done:
		t.Fatalf("%s exited: %v", w.proc.name, w.proc.err)
	case <-time.After(lockWaitSeconds * time.Second):
		t.Fatalf("%s said nothing", w.proc.name)
	}
	return ""
}

// token waits for the helper's lease and returns its fencing token.
func (w *fencedWriter) token(t *testing.T) int64 {
	t.Helper()
	line := w.next(t)
	tok, err := strconv.ParseInt(strings.TrimPrefix(line, "token "), 10, 64)
	require.NoError(t, err, "line %q", line)
	return tok
}

// write tells the helper to write and returns what it did: "wrote" or "refused".
func (w *fencedWriter) write(t *testing.T) string {
	t.Helper()
	_, err := io.WriteString(w.stdin, "write\n")
	require.NoError(t, err)
	return w.next(t)
}

// fencedWriteHelper is the helper process: it takes fencedLock with a lease, prints "token
// <n>", and when told (a line on stdin) writes its name to fencedData under its token, without
// looking at the lease again (the moment a pause hits), and prints "wrote" or "refused".
func fencedWriteHelper(rdb *redis.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lockWaitSeconds*time.Second)
	defer cancel()
	p := provider.New(rdb, &provider.Options{Logger: slog.New(slog.DiscardHandler)})
	lease, err := p.AcquireLease(ctx, []string{fencedLock}, provider.LeaseOptions{Expire: fencedTTL, Timeout: lockWaitSeconds * time.Second})
	if err != nil {
		return err
	}
	defer func() { _, _ = lease.Release(context.Background()) }()
	fmt.Printf("token %d\n", lease.FencingToken())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	wrote, err := fencedSet.Run(ctx, rdb, []string{fencedData, fencedFence}, lease.FencingToken(), name).Int()
	if err != nil {
		return fmt.Errorf("fenced write: %w", err)
	}
	if wrote == 1 {
		fmt.Println("wrote")
	} else {
		fmt.Println("refused")
	}
	return nil
}
