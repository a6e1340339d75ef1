// Package benchcpu lets a Go benchmark report the CPU time of its own
// thread per operation, which stays meaningful on a shared machine where
// other processes take turns on the cores and wall time does not.
package benchcpu

import (
	"runtime"
	"testing"
)

// Report pins the benchmark to its OS thread and, when the returned
// function runs, reports that thread's CPU time per operation as
// cpu-ns/op. Use as defer benchcpu.Report(b)(). Work the benchmark hands
// to other goroutines (the garbage collector's, a server's) is not counted.
func Report(b *testing.B) func() {
	runtime.LockOSThread()
	start, ok := threadCPU()
	return func() {
		if end, ok2 := threadCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
		runtime.UnlockOSThread()
	}
}
