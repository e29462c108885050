package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/redisproc"
)

// SentinelMaster is the master name the sentinels of StartSentinel monitor.
const SentinelMaster = "mymaster"

// The Sentinel settings of StartSentinel: a master is down after sentinelDownAfter without an
// answer, and two sentinels must agree. (With 1 s, a loaded CI machine had the sentinels see a
// master they had just promoted down, and fail over again to the killed one.) A sentinel tries no new failover of the same master
// within twice sentinelFailoverTimeout of its last attempt.
const (
	sentinelCount           = 3
	sentinelQuorum          = 2
	sentinelDownAfter       = 2 * time.Second
	sentinelFailoverTimeout = 3 * time.Second
	// sentinelReady bounds StartSentinel's wait until the sentinels know each other and the
	// replica (they announce themselves every 2 s).
	sentinelReady = 30 * time.Second
)

// nodeArgs are the data servers' arguments: a replica's full sync starts at once (Redis 7
// waits 5 s for more replicas by default).
var nodeArgs = []string{"--repl-diskless-sync-delay", "0"}

// SentinelConfig tunes the deployment a test starts; the zero value is StartSentinel's.
type SentinelConfig struct {
	// DebugCommand lets loopback clients send DEBUG to the data servers (enable-debug-command
	// local: Redis 7 refuses DEBUG by default), which Node.Stall needs.
	DebugCommand bool
}

// Sentinel is a Redis Sentinel deployment owned by one test: a master, one replica and three
// sentinels (quorum 2, down-after 2 s, failover-timeout 3 s), on free loopback ports.
type Sentinel struct {
	// URL is the deployment's address in redisconn.Open's format (redis://S1/0?master_name=…&addr=S2&addr=S3).
	URL string
	// Nodes are the data servers: Nodes[0] starts as the master, Nodes[1] as its replica.
	Nodes []*Node

	sentinels []*redisproc.Server
	clients   []*redis.SentinelClient
}

// Node is one data server of a Sentinel deployment.
type Node struct {
	// Addr is host:port on 127.0.0.1.
	Addr string

	proc   *redisproc.Server
	client *redis.Client
}

// StartSentinel starts a Sentinel deployment and waits until every sentinel monitors the
// master, knows the two other sentinels and the replica, and the replica is in sync. It fails
// the test (never skips) when redis-server is not installed.
func StartSentinel(t testing.TB) *Sentinel { return StartSentinelWith(t, SentinelConfig{}) }

// StartSentinelWith is StartSentinel with cfg.
func StartSentinelWith(t testing.TB, cfg SentinelConfig) *Sentinel {
	t.Helper()
	dir := t.TempDir()
	s := &Sentinel{}
	for i := range 2 {
		args := slices.Clone(nodeArgs)
		if cfg.DebugCommand {
			args = append(args, "--enable-debug-command", "local")
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(s.Nodes[0].Addr)
			args = append(args, "--replicaof", host, port)
		}
		proc := startProc(t, redisproc.Options{Args: args, Dir: subdir(t, dir, "node-"+strconv.Itoa(i+1))})
		c := redis.NewClient(&redis.Options{Addr: proc.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		s.Nodes = append(s.Nodes, &Node{Addr: proc.Addr(), proc: proc, client: c})
	}
	host, port, _ := net.SplitHostPort(s.Nodes[0].Addr)
	conf := fmt.Sprintf("sentinel monitor %s %s %s %d\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\n"+
		"sentinel failover-timeout %[1]s %[6]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		SentinelMaster, host, port, sentinelQuorum, sentinelDownAfter.Milliseconds(), sentinelFailoverTimeout.Milliseconds())
	var addrs []string
	for i := range sentinelCount {
		sdir := subdir(t, dir, "sentinel-"+strconv.Itoa(i+1))
		file := filepath.Join(sdir, "sentinel.conf")
		if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		proc := startProc(t, redisproc.Options{ConfigFile: file, Args: []string{"--sentinel"}, Dir: sdir})
		c := redis.NewSentinelClient(&redis.Options{Addr: proc.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		s.sentinels = append(s.sentinels, proc)
		s.clients = append(s.clients, c)
		addrs = append(addrs, proc.Addr())
	}
	s.URL = "redis://" + addrs[0] + "/0?master_name=" + SentinelMaster + "&addr=" + strings.Join(addrs[1:], "&addr=")
	t.Cleanup(func() {
		if t.Failed() {
			s.logState(t)
		}
	})
	await(t, sentinelReady, "the sentinels to know each other and the replica", func(ctx context.Context) error {
		for _, c := range s.clients {
			m, err := c.Master(ctx, SentinelMaster).Result()
			if err != nil {
				return err
			}
			if m["flags"] != "master" || m["num-other-sentinels"] != strconv.Itoa(sentinelCount-1) || m["num-slaves"] != "1" {
				return fmt.Errorf("sentinel sees flags %q, %s other sentinels, %s replicas",
					m["flags"], m["num-other-sentinels"], m["num-slaves"])
			}
		}
		return s.replicaReady(ctx, s.Nodes[1], s.Nodes[0])
	})
	return s
}

// startProc starts one server for the test and stops it at t.Cleanup.
func startProc(t testing.TB, opts redisproc.Options) *redisproc.Server {
	t.Helper()
	opts.KillWithParent = true
	proc, err := redisproc.Start(t.Context(), opts)
	mustStart(t, "start redis-server", err)
	t.Cleanup(proc.Stop)
	return proc
}

// subdir creates dir/name.
func subdir(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return path
}

// Client returns a go-redis client straight to the node (no retries, 1 s dial timeout),
// closed when the test ends.
func (n *Node) Client() *redis.Client { return n.client }

// Kill stops the node with SIGKILL, like a crash, and waits until it has exited.
func (n *Node) Kill(t testing.TB) {
	t.Helper()
	if err := n.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("redistest: kill %s: %v", n.Addr, err)
	}
	<-n.proc.Done()
}

// Restart starts a killed node again on its address with the arguments it first had: the first
// master comes back as an empty master, which the sentinels then make a replica (AwaitReplica).
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	if err := n.proc.Restart(t.Context(), 0); err != nil {
		t.Fatalf("redistest: restart %s: %v", n.Addr, err)
	}
}

// Master returns the node that every sentinel names as the master now (SENTINEL
// get-master-addr-by-name), failing the test when they disagree or name another address.
func (s *Sentinel) Master(t testing.TB) *Node {
	t.Helper()
	addr, agreed, err := s.masterAddr(t.Context())
	if err != nil || !agreed {
		t.Fatalf("redistest: the sentinels do not agree on the master (%s): %v", addr, err)
	}
	return s.node(t, addr)
}

// masterAddr asks every sentinel for the master's address and returns the first answer, and
// whether every sentinel gave it.
func (s *Sentinel) masterAddr(ctx context.Context) (addr string, agreed bool, err error) {
	agreed = true
	for i, c := range s.clients {
		hp, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
		if err != nil {
			return addr, false, err
		}
		if len(hp) != 2 {
			return addr, false, fmt.Errorf("get-master-addr-by-name answered %q", hp)
		}
		a := net.JoinHostPort(hp[0], hp[1])
		if i == 0 {
			addr = a
		}
		agreed = agreed && a == addr
	}
	return addr, agreed, nil
}

// node returns the node at addr.
func (s *Sentinel) node(t testing.TB, addr string) *Node {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	t.Fatalf("redistest: the sentinels name %s, which is none of the nodes", addr)
	return nil
}

// AwaitFailover waits up to limit until the sentinels name a master other than from, and
// returns it with the moment the first sentinel named it (the promotion); it returns once
// every sentinel names it and it answers as a master.
func (s *Sentinel) AwaitFailover(t testing.TB, from *Node, limit time.Duration) (*Node, time.Time) {
	t.Helper()
	var promoted time.Time
	var to string
	await(t, limit, "a failover from "+from.Addr, func(ctx context.Context) error {
		for _, c := range s.clients {
			hp, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
			if err == nil && len(hp) == 2 && net.JoinHostPort(hp[0], hp[1]) != from.Addr && promoted.IsZero() {
				promoted, to = time.Now(), net.JoinHostPort(hp[0], hp[1])
			}
		}
		if promoted.IsZero() {
			return errors.New("no sentinel names another master")
		}
		addr, agreed, err := s.masterAddr(ctx)
		switch {
		case err != nil:
			return err
		case !agreed || addr != to:
			return fmt.Errorf("the sentinels do not all name %s yet", to)
		}
		role, err := s.node(t, to).info(ctx, "role")
		if err != nil || role != "master" {
			return fmt.Errorf("%s answers role %q (%v)", to, role, err)
		}
		return nil
	})
	return s.node(t, to), promoted
}

// AwaitReplica waits up to limit until n replicates the current master, in sync, and no
// sentinel sees it down: a failover may then promote it.
func (s *Sentinel) AwaitReplica(t testing.TB, n *Node, limit time.Duration) {
	t.Helper()
	await(t, limit, n.Addr+" to replicate the master", func(ctx context.Context) error {
		addr, agreed, err := s.masterAddr(ctx)
		switch {
		case err != nil:
			return err
		case !agreed:
			return errors.New("the sentinels do not agree on the master")
		case addr == n.Addr:
			return fmt.Errorf("%s is the master", n.Addr)
		}
		return s.replicaReady(ctx, n, s.node(t, addr))
	})
}

// replicaReady reports why n is not yet a replica of master in sync that every sentinel sees
// up, or nil.
func (s *Sentinel) replicaReady(ctx context.Context, n, master *Node) error {
	info, err := n.client.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	f := fields(info)
	_, port, _ := net.SplitHostPort(master.Addr)
	if f["role"] != "slave" || f["master_port"] != port || f["master_link_status"] != "up" || f["master_sync_in_progress"] != "0" {
		return fmt.Errorf("%s: role %s, master port %s (want %s), link %s", n.Addr, f["role"], f["master_port"], port, f["master_link_status"])
	}
	for _, c := range s.clients {
		replicas, err := c.Replicas(ctx, SentinelMaster).Result()
		if err != nil {
			return err
		}
		seen := false
		for _, r := range replicas {
			if r["name"] == n.Addr {
				seen = true
				if r["flags"] != "slave" {
					return fmt.Errorf("a sentinel sees %s with flags %q", n.Addr, r["flags"])
				}
			}
		}
		if !seen {
			return fmt.Errorf("a sentinel does not list %s as a replica", n.Addr)
		}
	}
	return nil
}

// PauseAndSync pauses master's writes (CLIENT PAUSE pause WRITE) and waits up to limit until
// every other node that is up, a replica of master, has all its writes (the same offset): a
// failover then loses nothing. It returns when the pause had begun.
func (s *Sentinel) PauseAndSync(t testing.TB, master *Node, pause, limit time.Duration) time.Time {
	t.Helper()
	if err := master.client.Do(t.Context(), "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatalf("redistest: CLIENT PAUSE on %s: %v", master.Addr, err)
	}
	paused := time.Now()
	await(t, limit, "the replicas to catch up with "+master.Addr, func(ctx context.Context) error {
		want, err := master.info(ctx, "master_repl_offset")
		if err != nil {
			return err
		}
		for _, n := range s.Nodes {
			if n == master {
				continue
			}
			select {
			case <-n.proc.Done():
				continue // down
			default:
			}
			if got, err := n.info(ctx, "slave_repl_offset"); err != nil || got != want {
				return fmt.Errorf("%s at offset %s, the master at %s (%v)", n.Addr, got, want, err)
			}
		}
		return nil
	})
	return paused
}

// Unpause ends a CLIENT PAUSE on n.
func (n *Node) Unpause(t testing.TB) {
	t.Helper()
	if err := n.client.Do(t.Context(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatalf("redistest: CLIENT UNPAUSE on %s: %v", n.Addr, err)
	}
}

// stallProbe is how long Stall's PING waits for an answer before it takes the node as asleep.
const stallProbe = 100 * time.Millisecond

// Stall has the node sleep for d (DEBUG SLEEP; the deployment needs DebugCommand): it answers
// no client and reads nothing meanwhile, its replication stream from the master included. It
// returns once the node has stopped answering (a PING got no answer within stallProbe), with a
// channel closed when the node is awake again. d must stay below the sentinels' down-after
// (1 s), so that they never see the node down: a replica seen down (+sdown) is not promoted.
func (n *Node) Stall(t testing.TB, d time.Duration) <-chan struct{} {
	t.Helper()
	if d >= sentinelDownAfter {
		t.Fatalf("redistest: a stall of %s would have the sentinels see %s down (down-after %s)", d, n.Addr, sentinelDownAfter)
	}
	sleeper := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: d + 5*time.Second})
	awake := make(chan struct{})
	var sleepErr error
	go func() {
		defer close(awake)
		sleepErr = sleeper.Do(context.Background(), "DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', 3, 64)).Err()
	}()
	t.Cleanup(func() {
		<-awake
		_ = sleeper.Close()
	})
	pinger := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: stallProbe})
	defer func() { _ = pinger.Close() }()
	await(t, d, n.Addr+" to sleep", func(ctx context.Context) error {
		select {
		case <-awake:
			return fmt.Errorf("DEBUG SLEEP ended before %s was seen asleep: %v", n.Addr, sleepErr)
		default:
		}
		err := pinger.Ping(ctx).Err()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return fmt.Errorf("%s answers PING (%v)", n.Addr, err)
	})
	return awake
}

// Clog writes filler to n, a master whose replicas are stalled (Stall), until n holds
// replication data of theirs in its own memory (CLIENT LIST omem): their sockets' kernel
// buffers, which a replica reads when it wakes even after its master died, are then full, and
// every write that follows stays in n's memory until the replicas wake: SIGKILLed before, n takes
// it with it. The filler keys are redistest:clog:<n>.
func (n *Node) Clog(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	filler := strings.Repeat("x", clogChunk)
	for written := 0; ; written += clogChunk {
		pending, err := n.replicaOutput(ctx)
		switch {
		case err != nil:
			t.Fatalf("redistest: clog %s: %v", n.Addr, err)
		case pending >= clogHeld:
			return
		case written >= clogLimit:
			t.Fatalf("redistest: %s holds %d bytes for its replicas after %d bytes of filler: are they stalled?", n.Addr, pending, written)
		}
		if err := n.client.Set(ctx, "redistest:clog:"+strconv.Itoa(written/clogChunk), filler, 0).Err(); err != nil {
			t.Fatalf("redistest: clog %s: %v", n.Addr, err)
		}
	}
}

// The filler of Clog: clogChunk a write, at most clogLimit in all, until a replica's output
// (omem) reaches clogHeld. Redis 7 counts a replica's omem from the start of the replication
// buffer block holding its next unsent byte to the end of the last block, room not yet used
// included; a block holds at most the larger of 16 KB and one argument of a write (clogChunk
// here), rounded up by the allocator (by a quarter at most), so the sent part of the first block
// and the room left in the last make less than 2.5 chunks: clogHeld, 4 chunks, means more than a
// chunk unsent, in the master's memory.
const (
	clogChunk = 256 << 10
	clogHeld  = 4 * clogChunk
	clogLimit = 64 << 20
)

// replicaOutput returns the least output (omem) CLIENT LIST shows for a replica of the node,
// failing when it has none.
func (n *Node) replicaOutput(ctx context.Context) (int, error) {
	list, err := n.client.Do(ctx, "CLIENT", "LIST", "TYPE", "replica").Text()
	if err != nil {
		return 0, err
	}
	least, replicas := 0, 0
	for line := range strings.Lines(list) {
		for _, field := range strings.Fields(line) {
			v, ok := strings.CutPrefix(field, "omem=")
			if !ok {
				continue
			}
			omem, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("CLIENT LIST: %s: %w", field, err)
			}
			if replicas == 0 || omem < least {
				least = omem
			}
			replicas++
		}
	}
	if replicas == 0 {
		return 0, fmt.Errorf("%s has no replica", n.Addr)
	}
	return least, nil
}

// info returns one field of the node's INFO replication.
func (n *Node) info(ctx context.Context, field string) (string, error) {
	info, err := n.client.Info(ctx, "replication").Result()
	if err != nil {
		return "", err
	}
	return fields(info)[field], nil
}

// fields parses INFO's "name:value" lines.
func fields(info string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// logState logs the end of every server's output: the sentinels log their view (+sdown,
// +odown, +switch-master, +convert-to-slave).
func (s *Sentinel) logState(t testing.TB) {
	for i, p := range s.sentinels {
		t.Logf("sentinel %d (%s) log:\n%s", i+1, p.Addr(), tail(p.Output(), 4000))
	}
	for i, n := range s.Nodes {
		t.Logf("node %d (%s) log:\n%s", i+1, n.Addr, tail(n.proc.Output(), 2000))
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
