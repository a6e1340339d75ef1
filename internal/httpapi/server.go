package httpapi

import (
	"net/http"
	"time"
)

// NewServer returns the HTTP server that serves h in `serve`: timeouts
// bound a slow client's headers, body and reads of the answer, and how
// long a keep-alive connection may idle; headers are capped at 64 KiB.
// The load generator's bare handler runs in the same server, so that
// comparing the two measures the handler stack alone.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
