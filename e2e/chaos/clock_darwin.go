package chaos

import "golang.org/x/sys/unix"

// monoClock is the clock MonoNow reads. On macOS libuv reads mach_continuous_time for Node's
// process.hrtime.bigint(), which is CLOCK_MONOTONIC_RAW there (macOS's CLOCK_MONOTONIC is
// another clock, adjusted by NTP), so MonoNow reads CLOCK_MONOTONIC_RAW to stay comparable.
const monoClock = unix.CLOCK_MONOTONIC_RAW
