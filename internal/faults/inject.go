//go:build faultinject

package faults

import (
	"os"
	"syscall"
)

// Crash kills the process with SIGKILL, as the kernel or an operator
// would, when TOOLGATE_CRASH_AT names point: nothing deferred runs and
// nothing is flushed.
func Crash(point string) {
	if os.Getenv(EnvCrashAt) != point {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not delivered synchronously: never go on
}
