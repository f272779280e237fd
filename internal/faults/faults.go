//go:build !faultinject

package faults

// Crash does nothing in normal builds.
func Crash(point string) {}
