package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/towerdefence/platformctl/internal/matchmaking"
)

// handleQueues serves the queues response from the service's memory,
// gzip-compressed for clients that accept it. The maps can change at any
// time, so clients must revalidate (no-cache); a matching If-None-Match
// gets 304 with no body.
func handleQueues(log *slog.Logger, mm *matchmaking.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap, err := mm.Queues(r.Context())
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		body, etag := snap.JSON, snap.ETag
		gzipped := acceptsGzip(r.Header.Get("Accept-Encoding"))
		if gzipped {
			body, etag = snap.Gzip, snap.GzipETag
		}
		h := w.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("Vary", "Accept-Encoding")
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		if gzipped {
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body) //nolint:errcheck // the client went away
	})
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(header string) bool {
	for rest := header; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.TrimSpace(coding)
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := strings.TrimSpace(params)
		if v, ok := strings.CutPrefix(q, "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f == 0 {
				continue
			}
		}
		return true
	}
	return false
}
