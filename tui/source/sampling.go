package source

import (
	"context"
	"time"
)

// SampleRun is the sampling run under way, as Status reports it.
type SampleRun struct {
	// ID is the run's, as Watcher.Sample returned it (0: none under way).
	ID int
	// Stats are its last step's.
	Stats SampleStats
}

type sampleReq struct {
	sm *Sampler
	id int
}

// Sample starts a sampling run of sm (Sampler.Step every SampleInterval until it is done),
// replacing the run under way, and returns its ID; nil stops the run under way (and returns
// 0). The run's steps appear in Status.Sample; Status.SampleDone is the ID of the last run that
// ended by itself. It never blocks.
func (w *Watcher) Sample(sm *Sampler) int {
	req := sampleReq{sm: sm}
	if sm != nil {
		// Not under w.mu: the program calls Sample, and update holds w.mu while it waits for
		// the program to take an Update.
		req.id = int(w.sampleIDs.Add(1))
	}
	for {
		select {
		case w.sample <- req:
			return req.id
		default:
		}
		select { // only the latest request counts
		case <-w.sample:
		default:
		}
	}
}

// sampling runs the sampling runs the operator starts (Sample): time-boxed, outside the
// budget, their cost stated on screen while they run.
func (w *Watcher) sampling(ctx context.Context) {
	var run sampleReq
	for {
		if run.sm == nil {
			select {
			case <-ctx.Done():
				return
			case run = <-w.sample:
				w.startSample(ctx, run)
			}
			continue
		}
		st, err := run.sm.Step(ctx, w.hub)
		if ctx.Err() != nil {
			return
		}
		if run.sm.Done(time.Now()) {
			id := run.id
			run = sampleReq{}
			w.update(ctx, func(st *Status) { st.Sample, st.SampleDone = SampleRun{}, id },
				Update{Notice: "sampling done: hand-offs seen are in the hot view (3)"})
			continue
		}
		if err == nil {
			w.update(ctx, func(s *Status) { s.Sample.Stats = st }, Update{})
		}
		t := time.NewTimer(SampleInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case run = <-w.sample:
			w.startSample(ctx, run)
		case <-t.C:
		}
		t.Stop()
	}
}

// startSample reports run as the one under way (none, when it stops sampling).
func (w *Watcher) startSample(ctx context.Context, run sampleReq) {
	sr := SampleRun{}
	if run.sm != nil {
		sr = SampleRun{ID: run.id, Stats: SampleStats{Left: SampleFor, Keys: len(run.sm.Keys())}}
	}
	w.update(ctx, func(st *Status) { st.Sample = sr }, Update{})
}
