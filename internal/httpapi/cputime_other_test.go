//go:build !unix

package httpapi_test

import "time"

// processCPU is not measured here; benchmarks then report cpu-ns/op as 0.
func processCPU() time.Duration { return 0 }
