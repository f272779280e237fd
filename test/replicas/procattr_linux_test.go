package replicas_test

import "syscall"

// dieWithTheTest makes the kernel SIGKILL a child when the test process
// dies without running its cleanups (a panic, go test's -timeout).
func dieWithTheTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
