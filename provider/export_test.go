package provider

import (
	"time"

	"github.com/locktui/locktui/internal/lockwire"
)

// PendingWakeups returns how many wake-up registrations p holds: zero whenever no call of p is
// waiting for a key. For tests only.
func PendingWakeups(p *Provider) int {
	p.wakeups.mu.Lock()
	defer p.wakeups.mu.Unlock()
	n := 0
	for _, set := range p.wakeups.waiting {
		n += len(set)
	}
	return n
}

// EpochKnown reports whether p has read the run_id of its Redis server. For tests only.
func EpochKnown(p *Provider) bool {
	p.epochs.mu.Lock()
	defer p.epochs.mu.Unlock()
	return p.epochs.ids != nil
}

// WakeupsLive reports whether p's wake-up listener runs with a confirmed subscription. For
// tests only.
func WakeupsLive(p *Provider) bool { return p.listen.live.Load() }

// Listening reports whether p's wake-up listener runs at all. For tests only.
func Listening(p *Provider) bool {
	p.listen.mu.Lock()
	defer p.listen.mu.Unlock()
	return p.listen.users > 0
}

// ScriptSHAs maps the file base name of each script to the SHA1 that EVALSHA sends for it.
var ScriptSHAs = map[string]string{"acquire": acquireScript.SHA(), "extend": extendScript.SHA(),
	"release": releaseScript.SHA(), "giveback": givebackScript.SHA(), "claimed": claimedScript.SHA(),
	"revoke": revokeScript.SHA()}

// RecordKey is the key of the holder record of lock key rk. For tests only.
var RecordKey = recordKey

// ShareKey is the key of the share record of lock key rk (share.go). For tests only.
var ShareKey = lockwire.ShareKey

// QueuedCalls returns how many calls of p wait for a pipeline slot (see batcher). For tests
// only.
func QueuedCalls(p *Provider) int {
	p.batch.mu.Lock()
	defer p.batch.mu.Unlock()
	return len(p.batch.queue)
}

// QueueKeys are the keys of the wait queue of lock key rk and of its tickets (queue.go). For
// tests only.
var QueueKeys = lockwire.QueueKeys

// WaitersKey is the key of the contention marker of lock key rk (lockwire). For tests only.
var WaitersKey = lockwire.WaitersKey

// NoteServerChange makes p count one more server change, as a probe that found a new run_id
// does (without ending any lease). For tests only.
func NoteServerChange(p *Provider) {
	p.epochs.mu.Lock()
	p.epochs.changes++
	p.epochs.mu.Unlock()
}

// ChecksRun returns how many checks of its keys l ran on what its Provider's listener heard
// (checkSoon) and found them still l's. For tests only.
func ChecksRun(l *Lease) int64 { return l.checks.Load() }

// CheckSoonAsRenewalFires makes l's renewal timer fire and, while its callback waits for l.mu,
// asks for a check as checkSoon does: the race of a message heard just as a renewal is due. For
// tests only.
func CheckSoonAsRenewalFires(l *Lease) {
	for {
		l.mu.Lock()
		if l.renewing == nil { // as the renewal code itself, never reset the timer under one
			break
		}
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	defer l.mu.Unlock()
	l.renewal.Reset(time.Nanosecond)
	time.Sleep(20 * time.Millisecond) // the callback now waits for l.mu
	l.checkSoonLocked("")
}
