package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/apitest"
)

// BenchmarkSocialCallback measures the server's own time in a callback:
// the callback's round trip less the time the provider spent answering
// the token and userinfo requests it made. The provider runs on loopback;
// the user is a returning one (the identity is known).
//
//	go test ./internal/httpapi -run '^$' -bench SocialCallback -benchtime 200x -count 3
func BenchmarkSocialCallback(b *testing.B) {
	// The provider logs each request through the default logger.
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.DiscardHandler))
	e := newSocialBenchServer(b)
	c := e.srv.Client(b)
	e.benchSignIn(b, c) // discovery, the JWKS and the account, once
	var own []time.Duration
	for b.Loop() {
		b.StopTimer()
		redirect := e.op.Login(b, e.benchStart(b, c), "alice")
		req, err := http.NewRequest(http.MethodGet, redirect, nil)
		if err != nil {
			b.Fatal(err)
		}
		busy := e.op.Busy()
		b.StartTimer()
		start := time.Now()
		res := c.Send(req)
		took := time.Since(start)
		b.StopTimer()
		if res.Status != http.StatusFound || res.Header.Get("Location") != "/" {
			b.Fatalf("callback: %d %s", res.Status, res.Header.Get("Location"))
		}
		own = append(own, took-(e.op.Busy()-busy))
		b.StartTimer()
	}
	slices.Sort(own)
	b.ReportMetric(float64(own[len(own)/2].Microseconds())/1000, "server-ms-median")
	b.ReportMetric(float64(own[len(own)*95/100].Microseconds())/1000, "server-ms-p95")
}

func newSocialBenchServer(b *testing.B) *socialEnv {
	return newSocialServerTB(b, apitest.WithEnv("PLATFORM_RATE_LIMIT_LOGIN_IP", "off"))
}

func (e *socialEnv) benchStart(b *testing.B, c *apitest.Client) string {
	b.Helper()
	res := c.Do("POST", socialMount+"/sign-in/social", map[string]any{"provider": "op"})
	var out struct{ URL string }
	res.Decode(b, &out)
	if res.Status != http.StatusOK || out.URL == "" {
		b.Fatalf("sign-in/social: %d %s", res.Status, res.Body)
	}
	return out.URL
}

func (e *socialEnv) benchSignIn(b *testing.B, c *apitest.Client) {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, e.op.Login(b, e.benchStart(b, c), "alice"), nil)
	if err != nil {
		b.Fatal(err)
	}
	if res := c.Send(req); res.Status != http.StatusFound {
		b.Fatalf("callback: %d", res.Status)
	}
}

// BenchmarkGuestSignIn creates guests from many client addresses at once
// (X-Forwarded-For from a trusted proxy), each address trying one more
// guest than its limit allows, and reports guests created per second. The
// limit must hold exactly: every address gets exactly perIP guests.
//
//	go test ./internal/httpapi -run '^$' -bench GuestSignIn -benchtime 3000x -count 3
func BenchmarkGuestSignIn(b *testing.B) {
	const perIP = 5
	srv := apitest.New(b, apitest.WithEnv("PLATFORM_TRUSTED_PROXIES", "127.0.0.1/32"),
		apitest.WithEnv("PLATFORM_RATE_LIMIT_GUEST_IP", fmt.Sprintf("%d/1h", perIP)), apitest.WithEnv("PLATFORM_LOG_LEVEL", "warn"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var seq atomic.Int64
	var mu sync.Mutex
	created := map[int64]int{}
	var refused atomic.Int64
	b.SetParallelism(16)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1) - 1
			addr := n / (perIP + 1)
			req, err := http.NewRequest(http.MethodPost, srv.URL+socialMount+"/sign-in/anonymous", nil)
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", addr>>16&255, addr>>8&255, addr&255))
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body) //nolint:errcheck // only the status matters
			res.Body.Close()
			switch res.StatusCode {
			case http.StatusOK:
				mu.Lock()
				created[addr]++
				mu.Unlock()
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				b.Errorf("guest sign-in: %d", res.StatusCode)
			}
		}
	})
	elapsed := time.Since(start)
	total := 0
	for addr, n := range created {
		total += n
		// An address whose requests all ran gets exactly perIP; only the
		// last, partial address may get fewer.
		if n > perIP || (n < perIP && addr != (seq.Load()-1)/(perIP+1)) {
			b.Errorf("address %d got %d guests, want %d", addr, n, perIP)
		}
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "guests/s")
}
