package source

import "time"

// IdleBudget is the average cost per second, in the units of the budget (a SCAN counts as the
// ScanCount keys it examines, a read as one), that the full refreshes may use while keyspace
// notifications keep the table live: the refreshes are then only there to repair drift (a lost
// notification, a class of events the server does not publish), so they are spread out until
// they cost no more than this on average. See docs/console-cost.md.
const IdleBudget = 500

// DriftInterval is the wait between the starts of two full refreshes while keyspace
// notifications keep the table live: at least floor, and long enough that a refresh costing
// what last cost averages to IdleBudget per second (100,000 locks: ~600,000 units, 100,000 for
// the SCANs and operator.ReadsPerKey per lock, so every ~20 minutes).
func DriftInterval(floor time.Duration, last ScanStats) time.Duration {
	spread := time.Duration(last.Cost) * time.Second / IdleBudget
	return max(floor, spread, last.Took)
}
