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
	w.sampleMu.Lock()
	w.sampleReq = &req // only the latest request counts
	w.sampleMu.Unlock()
	w.sampling.Urge()
	return req.id
}

// takeSample returns the latest Sample request not taken yet.
func (w *Watcher) takeSample() (sampleReq, bool) {
	w.sampleMu.Lock()
	defer w.sampleMu.Unlock()
	req := w.sampleReq
	w.sampleReq = nil
	if req == nil {
		return sampleReq{}, false
	}
	return *req, true
}

// samplingJob runs the sampling runs the operator starts (Sample): a step every
// SampleInterval while a run lasts, time-boxed, outside the budget, their cost stated on
// screen while they run.
func (w *Watcher) samplingJob() *Job {
	var run sampleReq
	return &Job{
		Name: "sampling",
		Every: func() time.Duration {
			if run.sm == nil {
				return 0 // until the next Sample
			}
			return SampleInterval
		},
		Run: func(ctx context.Context) error {
			if req, ok := w.takeSample(); ok {
				run = req
				w.startSample(ctx, run)
			}
			if run.sm == nil {
				return nil
			}
			st, err := run.sm.Step(ctx, w.hub)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if run.sm.Done(time.Now()) {
				id := run.id
				run = sampleReq{}
				w.update(ctx, func(st *Status) { st.Sample, st.SampleDone = SampleRun{}, id },
					Update{Notice: "sampling done: hand-offs seen are in the hot view (3)"})
				return nil
			}
			if err != nil {
				return err
			}
			w.update(ctx, func(s *Status) { s.Sample.Stats = st }, Update{})
			return nil
		},
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
