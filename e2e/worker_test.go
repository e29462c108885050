//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// callTimeout bounds one request to a worker, or one step of a test, on a loaded machine.
const callTimeout = 60 * time.Second

// Backends of node/worker.js.
const (
	backendBridge = "bridge" // @locktui/medusa-locking-bridge through the bridge
	backendStock  = "stock"  // stock @medusajs/locking-redis 2.21.2
)

// worker is one node/worker.js process: a bridge client or a stock provider, driven over
// JSON lines. Its methods are safe for concurrent use.
type worker struct {
	name   string
	p      *proc
	events chan workerEvent // "ready", "holding"

	wmu   sync.Mutex // serialises writes to stdin
	stdin io.WriteCloser

	mu      sync.Mutex
	nextID  int
	pending map[int]chan workerReply
	dead    bool
}

// workerEvent is a line of the worker with "event" set.
type workerEvent struct {
	Event string `json:"event"`
	ID    *int   `json:"id"`
	Key   string `json:"key"`
}

// workerReply answers one request.
type workerReply struct {
	ID     *int            `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *workerError    `json:"error"`
}

// workerError is an error a provider threw in the worker: the Medusa error type and message
// as the caller in Node sees them, and the bridge client's bridgeCode if any.
type workerError struct {
	Type    string  `json:"type"`
	Message string  `json:"message"`
	Code    *string `json:"code"`
}

func (e *workerError) Error() string { return fmt.Sprintf("%s: %s", e.Type, e.Message) }

// startWorker starts node/worker.js with the given backend. It returns at once; call
// awaitEvent(ctx, "ready") before sending requests that must find the provider connected.
// The cleanup closes its stdin (the worker closes its provider and exits), then kills it.
func startWorker(t *testing.T, name, backend, redisURL string, b *bridgeProc) *worker {
	t.Helper()
	node, compat := nodeEnv(t)
	cfg := map[string]any{"compatDir": compat, "backend": backend, "redisUrl": redisURL}
	if b != nil {
		cfg["bridgeUrl"], cfg["token"] = b.URL, b.Token
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	w := &worker{name: name, events: make(chan workerEvent, 16), pending: map[int]chan workerReply{}}
	cmd := exec.Command(node, filepath.Join(root, "e2e", "node", "worker.js"), string(cfgJSON))
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	w.p = startProc(t, name, cmd, procOptions{
		onStdout: w.dispatch,
		stop: func(p *proc) {
			w.closeInput()
			if !p.wait(stopGrace) {
				t.Logf("%s did not exit within %s of closing its stdin; killing it", name, stopGrace)
			}
		},
	})
	go func() {
		<-w.p.done
		w.mu.Lock()
		w.dead = true
		pending := w.pending
		w.pending = map[int]chan workerReply{}
		w.mu.Unlock()
		for _, ch := range pending {
			ch <- workerReply{Error: &workerError{Type: "exited", Message: fmt.Sprintf("%s exited: %v", name, w.p.err)}}
		}
	}()
	return w
}

// dispatch handles one stdout line of the worker.
func (w *worker) dispatch(line string) {
	var ev workerEvent
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		_, _ = w.p.stderr.Write([]byte("e2e: unreadable worker output: " + line + "\n"))
		return
	}
	if ev.Event != "" {
		select {
		case w.events <- ev:
		default:
			_, _ = w.p.stderr.Write([]byte("e2e: worker event dropped: " + line + "\n"))
		}
		return
	}
	var r workerReply
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.ID == nil {
		_, _ = w.p.stderr.Write([]byte("e2e: unexpected worker reply: " + line + "\n"))
		return
	}
	w.mu.Lock()
	ch := w.pending[*r.ID]
	delete(w.pending, *r.ID)
	w.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// awaitEvent waits for the worker's next event and checks it is the one named.
func (w *worker) awaitEvent(ctx context.Context, name string) (workerEvent, error) {
	select {
	case ev := <-w.events:
		if ev.Event != name {
			return ev, fmt.Errorf("%s: got event %q, want %q", w.name, ev.Event, name)
		}
		return ev, nil
	case <-w.p.done:
		return workerEvent{}, fmt.Errorf("%s exited before %q: %v; stderr: %s", w.name, name, w.p.err, w.p.stderr.Last(2000))
	case <-ctx.Done():
		return workerEvent{}, fmt.Errorf("%s: no %q event: %w", w.name, name, ctx.Err())
	}
}

// send writes one request and returns the channel its reply arrives on.
func (w *worker) send(op string, args any) (chan workerReply, error) {
	ch := make(chan workerReply, 1)
	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		return nil, fmt.Errorf("%s has exited: %v", w.name, w.p.err)
	}
	w.nextID++
	id := w.nextID
	w.pending[id] = ch
	w.mu.Unlock()
	line, err := json.Marshal(map[string]any{"id": id, "op": op, "args": args})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", op, err)
	}
	w.wmu.Lock()
	_, err = w.stdin.Write(append(line, '\n'))
	w.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: write %s: %w", w.name, op, err)
	}
	return ch, nil
}

// call sends one request and decodes its result into out (which may be nil). An error the
// provider threw comes back as *workerError.
func (w *worker) call(ctx context.Context, op string, args, out any) error {
	ch, err := w.send(op, args)
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if !r.OK {
			if r.Error == nil {
				return fmt.Errorf("%s: %s failed without an error", w.name, op)
			}
			return r.Error
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("%s: decode %s result %s: %w", w.name, op, r.Result, err)
			}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %s: %w", w.name, op, ctx.Err())
	}
}

// closeInput closes the worker's stdin: it closes its provider and exits.
func (w *worker) closeInput() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_ = w.stdin.Close()
}

// awaitWorkers waits until every worker is connected. Start them all first: loading the Medusa
// packages takes seconds of CPU per process.
func awaitWorkers(t *testing.T, ws ...*worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	for _, w := range ws {
		if _, err := w.awaitEvent(ctx, "ready"); err != nil {
			t.Fatalf("e2e: %v", err)
		}
	}
}
