package httpapi_test

import (
	"runtime"
	"testing"
)

// cpuTime reports, besides wall time, the CPU time of the benchmark's own
// thread per operation as cpu-ns/op, which stays meaningful on a shared
// machine where other processes take turns on the cores. A handler called
// directly runs on that thread, database round trips included, so this is
// the server's CPU per request less the background GC. Use as
// defer cpuTime(b)().
func cpuTime(b *testing.B) func() {
	runtime.LockOSThread()
	start, ok := threadCPU()
	return func() {
		if end, ok2 := threadCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
		runtime.UnlockOSThread()
	}
}
