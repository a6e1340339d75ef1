package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/benchcpu"
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

// BenchmarkLobbyListHandler is the load plan's lobby-list scenario without
// the network: the caller hosts a public lobby and 31 other players host
// one each; GET /api/player/lobbies goes through the whole middleware
// stack, session check included. cpu-ns/op is the CPU time of the
// benchmark's thread per request, which a busy machine hardly changes.
func BenchmarkLobbyListHandler(b *testing.B) {
	srv := newPlayerServer(b, apitest.WithEnv("PLATFORM_LOG_LEVEL", "warn"))
	me := newPlayer(b, srv)
	for _, p := range append([]*apitest.Account{me}, newPlayers(b, srv, 31)...) {
		if res := p.Client.Do("POST", "/api/player/lobbies", map[string]any{"queue": "casual-long", "visibility": "public"}); res.Status != 201 {
			b.Fatal(res.Status)
		}
	}
	h := srv.App.Handler(nil)
	req := httptest.NewRequest(http.MethodGet, "/api/player/lobbies", nil)
	req.Header.Set("Cookie", srv.App.Auth.Cookies().SessionCookieName("player")+"="+srv.App.Auth.Cookies().Sign(me.Token))
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"current":{`)) {
			b.Fatalf("lobbies = %d %s", rec.Code, rec.Body)
		}
	}
}

func newPlayers(tb testing.TB, srv *apitest.Server, n int) []*apitest.Account {
	out := make([]*apitest.Account, n)
	for i := range out {
		out[i] = newPlayer(tb, srv)
	}
	return out
}
