//go:build race

package main

// raceEnabled: this test binary runs under the race detector, whose
// instrumentation makes every goroutine's stack and the heap bigger than
// in a real build.
const raceEnabled = true
