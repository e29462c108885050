//go:build linux || darwin

package chaos

import "golang.org/x/sys/unix"

// MonoNow returns the system's monotonic clock in nanoseconds: CLOCK_MONOTONIC on Linux
// (CLOCK_MONOTONIC_RAW on macOS, see below). It is one clock for every process on the machine,
// never set back, so the logs of the holders of a chaos run, each in its own process, can be
// merged on it.
//
// Node's process.hrtime.bigint() reads the same clock (libuv's uv_hrtime: clock_gettime
// CLOCK_MONOTONIC on Linux, mach_continuous_time on macOS), so logs written by Go and Node
// processes are comparable. A Node holder must write the BigInt's digits into its line itself
// (`{"t":${process.hrtime.bigint()},…}`): JSON.stringify refuses a BigInt, and Number() loses
// nanoseconds once the machine has been up for more than 104 days (2^53 ns).
func MonoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(monoClock, &ts); err != nil {
		panic("chaos: clock_gettime: " + err.Error()) // only with an invalid clock id
	}
	return ts.Nano()
}
