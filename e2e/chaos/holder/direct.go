package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/e2e/chaos"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// retryPause is how long a holder waits after a failed attempt (Redis unreachable, a timed-out
// wait) before the next one.
const retryPause = 10 * time.Millisecond

// runGo is the "go" holder: provider.AcquireLease, work, Release, on random keys.
func runGo(ctx context.Context, h *holder) error {
	client, err := redisconn.Open(h.redis, redisconn.TLSFiles{})
	if err != nil {
		return err
	}
	defer client.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	restore := redisconn.LogTo(logger)
	defer restore()
	p := provider.New(client, &provider.Options{Logger: logger, MaximumRetryInterval: h.maxRetry})
	var stats counts
	defer stats.print(h.holder)
	for ctx.Err() == nil {
		key := h.pick()
		lease, err := p.AcquireLease(ctx, []string{key}, provider.LeaseOptions{Timeout: h.timeout, Expire: h.expire})
		if err != nil {
			stats.failed(err)
			pause(ctx, retryPause)
			continue
		}
		stats.acquired++
		h.logEv(key, chaos.Enter, chaos.Field{Name: "owner", Value: lease.Owner()})
		work := time.NewTimer(h.workTime())
		select {
		case <-lease.Done(): // lost while working: the job stops believing now
			h.logEv(key, chaos.Lost, chaos.Field{Name: "cause", Value: lossCause(lease.Err())},
				chaos.Field{Name: "deadline_in_ms", Value: time.Until(lease.Deadline()).Milliseconds()})
			stats.lost++
		case <-work.C:
			h.logEv(key, chaos.Exit)
		}
		work.Stop()
		if _, err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			stats.failed(err)
		}
	}
	return nil
}

// lossCause says why a lease was lost: the cause under the stock message, if any (the last
// failed renewal's error, a restarted server).
func lossCause(err error) string {
	var u interface{ Unwrap() []error }
	if !errors.As(err, &u) {
		return fmt.Sprint(err)
	}
	var causes []string
	for _, e := range u.Unwrap()[1:] {
		causes = append(causes, e.Error())
	}
	return strings.Join(causes, "; ")
}

// releaseIfOwner deletes a poller's key only while it still holds it.
var releaseIfOwner = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// runPoller is the "poller" holder: a foreign process that polls SET NX PX on random keys.
func runPoller(ctx context.Context, h *holder) error {
	client, err := redisconn.Open(h.redis, redisconn.TLSFiles{})
	if err != nil {
		return err
	}
	defer client.Close()
	restore := redisconn.LogTo(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer restore()
	// A SET whose reply took longer than this is not trusted: the key may have expired, or be
	// about to, before the work is done. The holder gives it back unused.
	trust := h.px / 4
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	var stats counts
	defer stats.print(h.holder)
	bg := context.WithoutCancel(ctx)
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		key := h.pick()
		rk := provider.DefaultNamespace + key
		owner := h.holder + ":" + strconv.Itoa(n)
		sent := time.Now()
		err := client.Do(bg, "SET", rk, owner, "NX", "PX", h.px.Milliseconds()).Err()
		if errors.Is(err, redis.Nil) {
			continue // held
		}
		if err != nil {
			stats.failed(err)
			// The SET may have run: give the key back if it is ours (best effort; else it
			// expires with its PX).
			_ = releaseIfOwner.Run(bg, client, []string{rk}, owner).Err()
			pause(ctx, retryPause)
			continue
		}
		if time.Since(sent) <= trust {
			stats.acquired++
			h.logEv(key, chaos.Enter, chaos.Field{Name: "owner", Value: owner})
			time.Sleep(h.workTime())
			h.logEv(key, chaos.Exit)
		} else {
			stats.late++
		}
		if err := releaseIfOwner.Run(bg, client, []string{rk}, owner).Err(); err != nil {
			stats.failed(err)
		}
		pause(ctx, h.rest)
	}
}

// counts are what a holder did, printed on stderr when it exits.
type counts struct {
	acquired, lost, late, failures int
	lastErr                        error
}

func (c *counts) failed(err error) {
	c.failures++
	c.lastErr = err
}

func (c *counts) print(holder string) {
	fmt.Fprintf(os.Stderr, "holder %s: %d acquired, %d lost, %d late replies, %d failed calls (last: %v)\n",
		holder, c.acquired, c.lost, c.late, c.failures, c.lastErr)
}
