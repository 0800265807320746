package drivertest

import "runtime"

// HeldKiB is what the Go runtime holds for live objects and goroutine
// stacks after a collection: a driver's own share of the agent's memory in
// benchmarks, without the noise of RSS (freed pages returned to the OS or
// not).
func HeldKiB() int {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int((m.HeapInuse + m.StackInuse) / 1024)
}
