package source

import "context"

// Pace charges the budget for what a walk made on the operator's behalf is about to send
// (operator.ScanOptions.Pace: scans SCANs, each charged ScanCount, and reads commands) and
// waits, as a refresh does, until the budget allows it or ctx ends. The console's release of
// an owner's locks walks the namespace through it, so it shares the refreshes' budget.
func (s *Source) Pace(ctx context.Context, scans, reads int) error {
	return s.limiter.Wait(ctx, scans*ScanCount+reads)
}

// Charged returns the cost charged to the budget so far: refreshes, paced reads and Pace.
func (s *Source) Charged() int64 { return s.limiter.Charged() }
