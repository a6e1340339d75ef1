package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/towerdefence/platformctl/internal/matchmaking"
)

// handleQueues serves the queues response from the service's memory. The
// maps can change at any time, so clients must revalidate (no-cache); a
// matching If-None-Match gets 304 with no body.
func handleQueues(log *slog.Logger, mm *matchmaking.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap, err := mm.Queues(r.Context())
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		h := w.Header()
		h.Set("ETag", snap.ETag)
		h.Set("Cache-Control", "no-cache")
		if etagMatch(r.Header.Get("If-None-Match"), snap.ETag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(snap.JSON)))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(snap.JSON) //nolint:errcheck // the client went away
	})
}

// etagMatch implements the weak comparison If-None-Match asks for (RFC
// 9110, 13.1.2): "*" or any listed tag equal to etag, W/ prefixes ignored.
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	etag = strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
