package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
)

func samplePrincipal(token string) *auth.Principal {
	now := time.Date(2026, 11, 27, 6, 0, 0, 123456789, time.UTC)
	u := &account.User{ID: uuid.New(), Email: "ada@example.com", Name: `Ada "the" <Lovelace>`, Nickname: "ada",
		CreatedAt: now, UpdatedAt: now}
	s := &auth.Session{ID: uuid.New(), Token: token, UserID: u.ID, ExpiresAt: now.Add(time.Hour),
		CreatedAt: now, UpdatedAt: now, IPAddress: "203.0.113.9", UserAgent: "game/1.0 \"quoted\""}
	return &auth.Principal{Realm: account.RealmPlayer, User: u, Session: s, Token: token, Rendering: &auth.Rendering{}}
}

func encodedSession(p *auth.Principal) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	respond(rec, http.StatusOK, sessionResponse{Session: p.Session, User: p.User})
	return rec
}

// The kept body with the request's token spliced in is byte for byte what
// encoding the session answers, on the first request and the later ones.
func TestRespondSessionMatchesTheEncoder(t *testing.T) {
	p := samplePrincipal("tok3n_-AbC123")
	want := encodedSession(p)
	for i := range 3 {
		rec := httptest.NewRecorder()
		respondSession(rec, p)
		if !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("request %d: body\n%s\nwant\n%s", i, rec.Body, want.Body)
		}
		for _, k := range []string{"Content-Type", "Content-Length"} {
			if got := rec.Header().Get(k); got != want.Header().Get(k) {
				t.Fatalf("request %d: %s = %q, want %q", i, k, got, want.Header().Get(k))
			}
		}
	}
	if p.Rendering.Load() == nil {
		t.Fatal("the body was not kept")
	}
}

// Each request gets its own token, even through another request's kept
// body, and a token that JSON would escape is encoded instead of spliced.
func TestRespondSessionSplicesEachToken(t *testing.T) {
	p := samplePrincipal("first")
	respondSession(httptest.NewRecorder(), p)
	for _, token := range []string{"second", `odd"token\`} {
		q := *p
		sess := *p.Session
		sess.Token = token
		q.Session, q.Token = &sess, token
		rec := httptest.NewRecorder()
		respondSession(rec, &q)
		if want := encodedSession(&q); !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("token %q: body\n%s\nwant\n%s", token, rec.Body, want.Body)
		}
	}
}

// BenchmarkSessionBody is what keeping get-session's body buys: the kept
// body with the token spliced in against encoding the session and user on
// every request.
func BenchmarkSessionBody(b *testing.B) {
	p := samplePrincipal("Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA")
	w := discardWriter{h: http.Header{}}
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			respondSession(w, p)
		}
	})
	b.Run("encoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			respond(w, http.StatusOK, sessionResponse{Session: p.Session, User: p.User})
		}
	})
}

// discardWriter is a ResponseWriter that keeps nothing but headers.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
