package chaos

import "golang.org/x/sys/unix"

// monoClock is the clock MonoNow reads: CLOCK_MONOTONIC, which libuv reads for Node's
// process.hrtime.bigint() on Linux.
const monoClock = unix.CLOCK_MONOTONIC
