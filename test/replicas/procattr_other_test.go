//go:build !linux

package replicas_test

import "syscall"

// dieWithTheTest: only Linux can tie a child's life to its parent's; the
// test's cleanups still kill every child by its pid.
func dieWithTheTest() *syscall.SysProcAttr { return nil }
