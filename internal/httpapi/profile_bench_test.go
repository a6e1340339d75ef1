package httpapi_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/mailtest"
)

// BenchmarkRequestToConfirm measures a whole profile change as a player
// lives it, over loopback HTTP: request-profile-change, the worker
// delivering the mail to the in-process SMTP server, and confirm-change
// with the token from that mail. It reports the median and 99th
// percentile of each phase and of the total.
//
//	PLATFORM_TEST_DATABASE_URL=postgres://… go test -run '^$' -bench RequestToConfirm -benchtime 300x ./internal/httpapi/
func BenchmarkRequestToConfirm(b *testing.B) {
	smtp := mailtest.Start(b, mailtest.Options{})
	srv := apitest.New(b,
		apitest.WithEnv("PLATFORM_SMTP_URL", smtp.URL()),
		apitest.WithEnv("PLATFORM_PROFILE_RATE_LIMIT", "10000"), // limits on, never reached
		apitest.WithEnv("PLATFORM_LOG_LEVEL", "warn"))
	acc := srv.SignUpPlayer(b)
	anon := srv.Client(b)
	callback := srv.URL + "/account/confirm"
	var request, delivery, confirmation, total []time.Duration
	n := 0
	for b.Loop() {
		n++
		start := time.Now()
		res := acc.Client.Do("POST", "/api/profile/request-profile-change",
			map[string]string{"name": "Bench", "nickname": fmt.Sprintf("bench%d", n), "callbackURL": callback})
		if res.Status != 200 {
			b.Fatalf("request: %d %s", res.Status, res.Body)
		}
		requested := time.Now()
		m := smtp.WaitForNth(b, 30*time.Second, mailtest.To(acc.User.Email), n)
		delivered := time.Now()
		res = anon.Do("POST", "/api/profile/confirm-change", map[string]string{"token": m.Token()})
		if res.Status != 200 {
			b.Fatalf("confirm: %d %s", res.Status, res.Body)
		}
		done := time.Now()
		request = append(request, requested.Sub(start))
		delivery = append(delivery, delivered.Sub(requested))
		confirmation = append(confirmation, done.Sub(delivered))
		total = append(total, done.Sub(start))
	}
	for _, phase := range []struct {
		name string
		d    []time.Duration
	}{{"request", request}, {"delivery", delivery}, {"confirm", confirmation}, {"total", total}} {
		slices.Sort(phase.d)
		b.ReportMetric(ms(percentile(phase.d, 50)), phase.name+"-p50-ms")
		b.ReportMetric(ms(percentile(phase.d, 99)), phase.name+"-p99-ms")
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
