package stocknode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/nodeproc"
	"github.com/locktui/locktui/internal/tailbuf"
)

// Script is the driver, relative to compat/.
const Script = "stock/driver.js"

// Packages are the npm packages the driver loads from compat/node_modules.
var Packages = []string{"@medusajs/locking-redis", "@medusajs/framework", "ioredis"}

// ErrExited is returned by calls made after the driver process ended, or pending when it ended.
var ErrExited = errors.New("stocknode: the stock driver process exited")

// Options configure the stock provider of one driver. The zero value gives stock defaults.
type Options struct {
	// Namespace is the provider option "namespace"; "" leaves it out, so stock uses its
	// default "medusa_lock:".
	Namespace string
	// RedisOptions is the provider option "redisOptions", handed to ioredis.
	RedisOptions map[string]any
	// ModuleOptions are the Locking module's options (waitLockingTimeout, defaultRetryInterval,
	// maximumRetryInterval, backoffFactor): stock 2.21.2 reads its tuning from there.
	ModuleOptions map[string]any
	// Trace reports every Lua script call of the stock provider (see Driver.WatchScript).
	Trace bool
	// ReadyTimeout bounds the start-up (loading the packages, connecting to Redis). Default 60 s.
	ReadyTimeout time.Duration
}

// Info is what the driver reports once the stock provider is built.
type Info struct {
	Versions struct {
		LockingRedis string `json:"lockingRedis"`
		IORedis      string `json:"ioredis"`
		Node         string `json:"node"`
	} `json:"versions"`
	// Namespace is the key prefix the stock provider uses.
	Namespace string `json:"namespace"`
	// Tuning is the stock provider's effective retry and timeout settings.
	Tuning struct {
		WaitLockingTimeout   float64 `json:"waitLockingTimeout"`
		DefaultRetryInterval float64 `json:"defaultRetryInterval"`
		MaximumRetryInterval float64 `json:"maximumRetryInterval"`
		BackoffFactor        float64 `json:"backoffFactor"`
	} `json:"tuning"`
}

// Driver is one running stock provider. Its methods are safe for concurrent use.
type Driver struct {
	// Info describes the stock provider (versions, namespace, tuning).
	Info Info

	proc   *nodeproc.Process
	stderr *tailbuf.Buffer
	exited chan struct{} // closed when the process has ended and every reply was dispatched

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]func(reply)
	execs    map[int64]*Execution
	watchers []*watcher
	logs     []Event
	scripts  []Event
	dead     bool
}

// reply is one answer line of the driver.
type reply struct {
	ID     *int64          `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// Start runs the stock provider against redisURL for the rest of the test. It fails the test
// (never skips) when node or the npm packages are missing, or when the provider does not start.
func Start(t testing.TB, redisURL string, opts *Options) *Driver {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	cfg := map[string]any{"redisUrl": redisURL, "trace": opts.Trace}
	if opts.Namespace != "" {
		cfg["namespace"] = opts.Namespace
	}
	if opts.RedisOptions != nil {
		cfg["redisOptions"] = opts.RedisOptions
	}
	if opts.ModuleOptions != nil {
		cfg["moduleOptions"] = opts.ModuleOptions
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("stocknode: encode config: %v", err)
	}
	compat, err := CompatDir()
	if err != nil {
		t.Fatalf("stocknode: %v", err)
	}
	cmd, err := nodeproc.Command(compat, Script, string(cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeproc.CheckDeps(compat, Packages...); err != nil {
		t.Fatalf("stocknode: %v", err)
	}
	d := &Driver{
		stderr:  tailbuf.New(64 << 10),
		exited:  make(chan struct{}),
		pending: map[int64]func(reply){},
		execs:   map[int64]*Execution{},
	}
	cmd.Stderr = d.stderr
	ready := d.watch(func(e Event) bool { return e.Event == "ready" })
	if d.proc, err = nodeproc.Start(cmd); err != nil {
		t.Fatalf("stocknode: %v", err)
	}
	go d.read()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("stock driver stderr (tail):\n%s", d.stderr.String())
		}
	})
	limit := opts.ReadyTimeout
	if limit <= 0 {
		limit = 60 * time.Second
	}
	select {
	case e := <-ready:
		if err := json.Unmarshal(e.raw, &d.Info); err != nil {
			t.Fatalf("stocknode: bad ready event %s: %v", e.raw, err)
		}
	case <-d.exited:
		t.Fatalf("stocknode: the stock driver exited during start-up: %s", d.stderr.Last(2000))
	case <-time.After(limit):
		t.Fatalf("stocknode: the stock driver was not ready within %s: %s", limit, d.stderr.Last(2000))
	}
	return d
}

// CompatDir finds compat/ in the locktui module the current directory is in
// (nodeproc.FindCompatDir), and checks that it holds the driver.
func CompatDir() (string, error) {
	compat, err := nodeproc.FindCompatDir(".")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(compat, filepath.FromSlash(Script))); err != nil {
		return "", fmt.Errorf("the stock driver is missing from %s: %w", compat, err)
	}
	return compat, nil
}

// Stderr returns the last lines the driver wrote to stderr.
func (d *Driver) Stderr() string { return d.stderr.String() }

// Call sends one request and decodes its result into out (which may be nil). A stock error
// comes back as *Error. When ctx ends first it returns ctx's error; the call still completes
// in Node and its reply is dropped.
func (d *Driver) Call(ctx context.Context, op string, args, out any) error {
	ch := make(chan reply, 1)
	id, err := d.send(op, args, func(r reply) { ch <- r }, nil)
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		return decode(op, r, out)
	case <-ctx.Done():
		d.forget(id)
		return ctx.Err()
	}
}

func decode(op string, r reply, out any) error {
	if !r.OK {
		if r.Error == nil {
			return fmt.Errorf("stocknode: %s failed without an error", op)
		}
		return r.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("stocknode: decode %s result %s: %w", op, r.Result, err)
	}
	return nil
}

// send writes one request; onReply is called from the reader with the answer, or with an
// ErrExited reply when the process ends first. A non-nil exec is registered under the request's
// id before the request is written, so it sees every event of its job.
func (d *Driver) send(op string, args any, onReply func(reply), exec *Execution) (int64, error) {
	d.mu.Lock()
	if d.dead {
		d.mu.Unlock()
		return 0, fmt.Errorf("%w: %s", ErrExited, d.stderr.Last(2000))
	}
	d.nextID++
	id := d.nextID
	d.pending[id] = onReply
	if exec != nil {
		exec.id = id
		d.execs[id] = exec
	}
	d.mu.Unlock()
	line, err := json.Marshal(map[string]any{"id": id, "op": op, "args": args})
	if err == nil {
		if err = d.proc.Send(line); err != nil {
			err = fmt.Errorf("%w: write %s: %v", ErrExited, op, err)
		}
	} else {
		err = fmt.Errorf("stocknode: encode %s: %w", op, err)
	}
	if err != nil {
		d.forget(id)
		return 0, err
	}
	return id, nil
}

func (d *Driver) forget(id int64) {
	d.mu.Lock()
	delete(d.pending, id)
	delete(d.execs, id)
	d.mu.Unlock()
}

// read dispatches every stdout line until the process ends, then fails what is pending.
func (d *Driver) read() {
	for {
		line, err := d.proc.Next(context.Background())
		if err != nil {
			break // nodeproc.ErrExited
		}
		d.dispatch(line)
	}
	d.mu.Lock()
	d.dead = true
	pending := d.pending
	d.pending = map[int64]func(reply){}
	d.mu.Unlock()
	gone := reply{Error: &Error{Type: "exited", Name: "ErrExited",
		Message: "the stock driver process exited: " + d.stderr.Last(2000)}}
	for _, onReply := range pending {
		onReply(gone)
	}
	close(d.exited)
}

func (d *Driver) dispatch(line []byte) {
	var probe struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		_, _ = d.stderr.Write([]byte("stocknode: unreadable driver output: " + string(line) + "\n"))
		return
	}
	if probe.Event != "" {
		d.event(line)
		return
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil || r.ID == nil {
		_, _ = d.stderr.Write([]byte("stocknode: unexpected driver reply: " + string(line) + "\n"))
		return
	}
	d.mu.Lock()
	onReply := d.pending[*r.ID]
	delete(d.pending, *r.ID)
	d.mu.Unlock()
	if onReply != nil {
		onReply(r)
	}
}

// CloseInput closes the driver's stdin: it answers what is in flight (running hold jobs end
// with an error) and exits. Later calls fail with ErrExited.
func (d *Driver) CloseInput() error { return d.proc.CloseInput() }

// stopGrace is how long stop gives the driver to answer and exit once its stdin is closed.
const stopGrace = 10 * time.Second

// stop closes stdin, gives the driver time to answer and exit, then kills it, and waits until
// every reply was dispatched.
func (d *Driver) stop() {
	_ = d.proc.Stop(stopGrace)
	<-d.exited
}
