package bench

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// infoReply is an INFO cpu commandstats reply of Redis 7.0, trimmed.
const infoReply = "# CPU\r\n" +
	"used_cpu_sys:1.250000\r\n" +
	"used_cpu_user:0.750125\r\n" +
	"used_cpu_sys_children:9.000000\r\n" +
	"used_cpu_user_children:9.000000\r\n" +
	"\r\n" +
	"# Commandstats\r\n" +
	"cmdstat_set:calls=10,usec=30,usec_per_call=3.00,rejected_calls=2,failed_calls=0\r\n" +
	"cmdstat_evalsha:calls=4,usec=80,usec_per_call=20.00,rejected_calls=0,failed_calls=1\r\n" +
	"cmdstat_client|setinfo:calls=2,usec=1,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n"

func TestParseRedisStatsReadsCPUAndEveryCommand(t *testing.T) {
	got, err := parseRedisStats(infoReply)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2000125 * time.Microsecond; got.cpu != want {
		t.Errorf("cpu = %v, want %v (sys + user, children left out)", got.cpu, want)
	}
	want := map[string]int64{"set": 12, "evalsha": 4, "client|setinfo": 2}
	if !maps.Equal(got.calls, want) {
		t.Errorf("calls = %v, want %v", got.calls, want)
	}
}

var badInfo = []struct{ name, info string }{
	{"no cpu section", "# Commandstats\r\ncmdstat_get:calls=1,usec=1\r\n"},
	{"no user time", "used_cpu_sys:1.0\r\n"},
	{"cpu not a number", "used_cpu_sys:x\r\nused_cpu_user:1\r\n"},
	{"no calls", "used_cpu_sys:1\r\nused_cpu_user:1\r\ncmdstat_get:usec=1\r\n"},
	{"calls not a number", "used_cpu_sys:1\r\nused_cpu_user:1\r\ncmdstat_get:calls=many\r\n"},
}

func TestParseRedisStatsRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range badInfo {
		if _, err := parseRedisStats(c.info); err == nil {
			t.Errorf("parseRedisStats(%s) did not fail", c.name)
		}
	}
}

func TestRedisStatsSinceAndAdd(t *testing.T) {
	s0 := redisStats{cpu: time.Second, calls: map[string]int64{"get": 5, "set": 3}}
	s1 := redisStats{cpu: 3 * time.Second, calls: map[string]int64{"get": 9, "set": 3, "del": 2}}
	d := s1.since(s0)
	if d.cpu != 2*time.Second || !maps.Equal(d.calls, map[string]int64{"get": 4, "del": 2}) {
		t.Errorf("since = %+v, want 2s and get 4, del 2 (no set: no calls in between)", d)
	}
	sum := s0.add(s1)
	if sum.cpu != 4*time.Second || !maps.Equal(sum.calls, map[string]int64{"get": 14, "set": 6, "del": 2}) {
		t.Errorf("add = %+v", sum)
	}
	if !maps.Equal(s0.calls, map[string]int64{"get": 5, "set": 3}) {
		t.Errorf("add changed its receiver: %v", s0.calls)
	}
	if z := (redisStats{}).add(s0); !maps.Equal(z.calls, s0.calls) {
		t.Errorf("zero.add(s0) = %v, want %v", z.calls, s0.calls)
	}
}

var lockCommandCases = []struct {
	name  string
	calls map[string]int64
	jobs  int
	want  int64
}{
	{"uncontended: every command but INFO", map[string]int64{"evalsha": 2, "set": 1, "get": 1, "del": 1, "info": 1}, 0, 5},
	{"contended: the jobs' INCR and DECR left out", map[string]int64{"set": 40, "evalsha": 10, "get": 10, "del": 10, "incr": 10, "decr": 10}, 10, 70},
	{"an INCR beyond the jobs is the lock's", map[string]int64{"incr": 12, "decr": 10}, 10, 2},
	{"fewer INCRs than jobs never count below 0", map[string]int64{"incr": 8, "decr": 8, "set": 3}, 10, 3},
	{"nothing", nil, 0, 0},
}

func TestLockCommandsLeavesOutTheBenchsOwn(t *testing.T) {
	for _, c := range lockCommandCases {
		if got := lockCommands(c.calls, c.jobs); got != c.want {
			t.Errorf("%s: lockCommands(%v, %d) = %d, want %d", c.name, c.calls, c.jobs, got, c.want)
		}
	}
}

func TestCountLeftSkipsExpiredKeysAndCountsThoseWithoutTTL(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e", "f", "g"}
	ttls := []*redis.DurationCmd{
		redis.NewDurationResult(-1, nil),
		redis.NewDurationResult(-2, nil), // expired between SCAN and PTTL
		redis.NewDurationResult(time.Second, nil),
		redis.NewDurationResult(-1, nil),
		redis.NewDurationResult(time.Minute, nil),
		redis.NewDurationResult(time.Minute, nil),
		redis.NewDurationResult(time.Minute, nil),
	}
	got := countLeft(keys, ttls)
	if got.Count != 6 || got.NoTTL != 2 {
		t.Errorf("countLeft = %d keys, %d without TTL, want 6, 2", got.Count, got.NoTTL)
	}
	if want := []string{"a", "c", "d", "e", "f"}; len(got.Sample) != keysLeftSample || got.Sample[1] != want[1] {
		t.Errorf("sample = %v, want %v", got.Sample, want)
	}
}

// The probe reads a real server: the commands a script calls count besides its EVALSHA, its own
// INFO is left to lockCommands, and the keys left are the new ones but the bench's counters.
func TestProbeCountsCommandsAndKeysLeftOnARealServer(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := t.Context()
	probe, err := openProbe(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(probe.close)
	if err := c.Set(ctx, "before", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Load the script first, so Run's EVALSHA finds it (no NOSCRIPT, no EVAL).
	if err := bareRelease.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}

	keys := probe.trackKeys(ctx)
	s0, err := probe.stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		c.Set(ctx, "gone", "token", 0).Err(),
		bareRelease.Run(ctx, c, []string{"gone"}, "token").Err(), // EVALSHA, GET, DEL
		c.Set(ctx, "kept", "v", 0).Err(),
		c.Set(ctx, "expiring", "v", time.Minute).Err(),
		c.Incr(ctx, counterPrefix+"x").Err(),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	s1, err := probe.stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := s1.since(s0)
	want := map[string]int64{"set": 3, "evalsha": 1, "get": 1, "del": 1, "incr": 1, "info": 1}
	if !maps.Equal(d.calls, want) {
		t.Errorf("commands between the reads = %v, want %v", d.calls, want)
	}
	if got := lockCommands(d.calls, 1); got != 6 {
		t.Errorf("lockCommands = %d, want 6", got)
	}
	if d.cpu < 0 {
		t.Errorf("cpu = %v", d.cpu)
	}

	left, ok, err := keys()
	if err != nil || !ok {
		t.Fatalf("keys left: %v, %v", ok, err)
	}
	if left.Count != 2 || left.NoTTL != 1 || len(left.Sample) != 2 || left.Sample[0] != "expiring" || left.Sample[1] != "kept" {
		t.Errorf("keys left = %+v, want expiring and kept, one without TTL", left)
	}

	var none *redisProbe
	if _, ok, err := none.trackKeys(ctx)(); ok || err != nil {
		t.Errorf("a nil probe: ok %v, err %v; want not measured, no error", ok, err)
	}
}
