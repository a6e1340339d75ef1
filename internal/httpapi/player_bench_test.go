package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"
)

// BenchmarkPlayerRoutes drives GET /api/player/lobbies and
// GET /api/player/bootstrap through the whole HTTP stack (session check
// included) from parallel clients, for CPU profiles; throughput figures
// come from load runs against `serve` (see README).
func BenchmarkPlayerRoutes(b *testing.B) {
	for _, path := range []string{"/api/player/lobbies", "/api/player/bootstrap"} {
		b.Run(path, func(b *testing.B) {
			srv := newPlayerServer(b)
			me := newPlayer(b, srv)
			for range 30 {
				host := newPlayer(b, srv)
				if res := host.Client.Do("POST", "/api/player/lobbies", map[string]any{"queue": "custom-hosted", "visibility": "public"}); res.Status != 201 {
					b.Fatal(res.Status)
				}
			}
			u, _ := url.Parse(srv.URL)
			cookies := me.Client.HTTP.Jar.Cookies(u)
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				for pb.Next() {
					req, _ := http.NewRequest("GET", srv.URL+path, nil)
					for _, c := range cookies {
						req.AddCookie(c)
					}
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body) //nolint:errcheck // only the status matters
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Errorf("status %d", res.StatusCode)
						return
					}
				}
			})
		})
	}
}
