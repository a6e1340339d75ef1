package httpapi

import (
	"log/slog"
	"net/http"
	"sync"

	"github.com/towerdefence/platformctl/internal/system"
)

func handleHello() http.Handler {
	return handleFixedJSON(func() any { return map[string]string{"message": "Hello from the platform API"} })
}

// handleHealth serves the health report, whose answer is made once per
// report (a report stands for system.HealthEvery).
func handleHealth(sys *system.Service) http.Handler {
	answers := latestAnswers[*system.Health, *answer]{make: func(h *system.Health) *answer {
		a := jsonAnswer(h, answerOptions{cacheControl: "no-store"})
		if !h.Healthy() && a.status == http.StatusOK {
			a.status = http.StatusServiceUnavailable
		}
		return a
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answers.of(sys.Health(r.Context())).serve(w, r)
	})
}

// handleMeta serves the service's metadata, which is fixed once the
// server is built (system.Service.AddMeta runs before it serves).
func handleMeta(sys *system.Service) http.Handler {
	return handleFixedJSON(func() any { return sys.Meta() })
}

// handleAPIDocument serves one of the API documents (the OpenAPI
// document, the index of the JSON Schemas), built on first request.
func handleAPIDocument(log *slog.Logger, pick func(*documents) []byte) http.Handler {
	doc := sync.OnceValues(func() (*answer, error) {
		docs, err := apiDocs()
		if err != nil {
			return nil, err
		}
		return newAnswer("application/json", pick(docs), answerOptions{}), nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := doc()
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		a.serve(w, r)
	})
}
