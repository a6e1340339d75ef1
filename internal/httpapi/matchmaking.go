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
// gets 304 with no body. Every client polls this route, so each
// snapshot's two answers are made once.
func handleQueues(log *slog.Logger, mm *matchmaking.Service) http.Handler {
	answers := latestAnswers[*matchmaking.Snapshot, queuesAnswers]{make: newQueuesAnswers}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap, err := mm.Queues(r.Context())
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		a := answers.of(snap)
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			a.gzip.serve(w, r)
			return
		}
		a.plain.serve(w, r)
	})
}

// queuesAnswers are the two answers to a queues request for one
// snapshot: plain JSON and gzip-compressed.
type queuesAnswers struct{ plain, gzip *answer }

func newQueuesAnswers(snap *matchmaking.Snapshot) queuesAnswers {
	const cache = "no-cache"
	return queuesAnswers{
		plain: newAnswer("application/json", snap.JSON, answerOptions{etag: snap.ETag, cacheControl: cache, varyOnEncoding: true}),
		gzip: newAnswer("application/json", snap.Gzip,
			answerOptions{etag: snap.GzipETag, cacheControl: cache, varyOnEncoding: true, gzip: true}),
	}
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
