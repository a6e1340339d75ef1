package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A request its client abandoned is no internal error: it is logged as
// 499 and nothing is written at the error level; a canceled context of a
// request still open is an internal error as before.
func TestRespondErrClientClosed(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/player/lobbies/join", nil)
	w := httptest.NewRecorder()
	respondErr(w, r, log, fmt.Errorf("join lobby: %w", context.Canceled))
	if w.Code != statusClientClosed || logs.Len() != 0 {
		t.Fatalf("abandoned request: status %d, log %q", w.Code, logs.String())
	}

	r = httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/player/lobbies/join", nil)
	w = httptest.NewRecorder()
	respondErr(w, r, log, fmt.Errorf("join lobby: %w", context.Canceled))
	if w.Code != http.StatusInternalServerError || !bytes.Contains(logs.Bytes(), []byte("request failed")) {
		t.Fatalf("open request: status %d, log %q", w.Code, logs.String())
	}
}
