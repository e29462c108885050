package source

import (
	"context"
	"time"

	"github.com/locktui/locktui/operator"
)

// Sampling, the opt-in contention probe for keys that only stock Medusa processes use (they
// publish no events).
const (
	// SampleFor is how long one sampling run lasts.
	SampleFor = 30 * time.Second
	// SampleInterval is how often the sampled keys are read.
	SampleInterval = 250 * time.Millisecond
	// SampleMaxKeys caps the keys sampled: the rows on screen, selected row first.
	SampleMaxKeys = 100
)

// Sampler reads a fixed set of keys every SampleInterval for SampleFor, so owner changes
// (hand-offs) between two reads are seen and counted as contention, and reads INFO
// commandstats once a second for the server's script calls per second (EVALSHA and EVAL: every
// acquisition attempt of a stock Medusa process is one). It bypasses the budget; its cost,
// Cost, is stated on screen while it runs.
type Sampler struct {
	src   *Source
	keys  []string
	until time.Time

	lastCalls   int64
	lastCallsAt time.Time
	callsPerSec float64
}

// SampleStats report one sampling step.
type SampleStats struct {
	// Left is the sampling time left.
	Left time.Duration
	// Keys is the number of keys sampled.
	Keys int
	// ScriptCallsPerSec is the server's EVALSHA+EVAL calls per second (0 until measured).
	ScriptCallsPerSec float64
	// Commands is what this step sent.
	Commands int
}

// NewSampler returns a sampler of keys (at most SampleMaxKeys) that runs SampleFor from now.
func (s *Source) NewSampler(keys []string) *Sampler {
	if len(keys) > SampleMaxKeys {
		keys = keys[:SampleMaxKeys]
	}
	return &Sampler{src: s, keys: keys, until: time.Now().Add(SampleFor)}
}

// Cost is the commands per second the sampler sends: the operator.ReadsPerKey reads of each key
// (the lock and its holder record) every SampleInterval, plus one INFO a second.
func (sm *Sampler) Cost() int {
	return operator.ReadsPerKey*len(sm.keys)*int(time.Second/SampleInterval) + 1
}

// Keys returns the keys sampled.
func (sm *Sampler) Keys() []string { return sm.keys }

// Done reports whether the sampling time is over.
func (sm *Sampler) Done(now time.Time) bool { return !now.Before(sm.until) }

// Step reads the keys into sink and, once a second, the script call counter.
func (sm *Sampler) Step(ctx context.Context, sink Sink) (SampleStats, error) {
	st := SampleStats{Left: max(time.Until(sm.until), 0), Keys: len(sm.keys)}
	if _, err := sm.src.ReadUnpacedInto(ctx, sink, sm.keys); err != nil {
		return st, err
	}
	st.Commands = operator.ReadsPerKey * len(sm.keys)
	if now := time.Now(); now.Sub(sm.lastCallsAt) >= time.Second {
		calls, err := sm.src.ScriptCalls(ctx)
		if err == nil {
			if !sm.lastCallsAt.IsZero() {
				sm.callsPerSec = float64(calls-sm.lastCalls) / now.Sub(sm.lastCallsAt).Seconds()
			}
			sm.lastCalls, sm.lastCallsAt = calls, now
		}
		st.Commands++
	}
	st.ScriptCallsPerSec = sm.callsPerSec
	return st, nil
}
