package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/towerdefence/platformctl/internal/auth"
)

// get-session answers the same session and user on every request until
// one of them changes, and encoding them was the largest part of what the
// route cost. So its body is encoded once per cached session and kept in
// the session's auth.Rendering; each request splices its own token into
// the kept bytes. BenchmarkSessionBody puts the kept body at a tenth of
// the encoder's time, and `scripts/bench.sh side` the route's CPU time per
// request about 7% lower with it (docs/performance.md).

// sessionBody is get-session's body for one cached session, encoded with
// an empty token; the token goes at tokenAt.
type sessionBody struct {
	json    []byte
	tokenAt int
}

// tokenField is where the token's value starts in the encoded body: the
// session object comes first and its id is a UUID, so the first match is
// the session's token.
var tokenField = []byte(`"token":"`)

// respondSession writes get-session's 200 answer for p.
func respondSession(w http.ResponseWriter, p *auth.Principal) {
	body, ok := renderedSession(p)
	if !ok || !plainToken(p.Token) {
		respond(w, http.StatusOK, sessionResponse{Session: p.Session, User: p.User})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body.json)+len(p.Token)))
	w.WriteHeader(http.StatusOK)
	// Errors mean the client went away; there is no one to tell.
	w.Write(body.json[:body.tokenAt]) //nolint:errcheck
	io.WriteString(w, p.Token)        //nolint:errcheck
	w.Write(body.json[body.tokenAt:]) //nolint:errcheck
}

// renderedSession returns p's kept body, encoding and keeping it first
// when this cached session has none yet.
func renderedSession(p *auth.Principal) (*sessionBody, bool) {
	if p.Rendering == nil {
		return nil, false
	}
	if b, ok := p.Rendering.Load().(*sessionBody); ok {
		return b, true
	}
	sess := *p.Session
	sess.Token = ""
	raw, err := json.Marshal(sessionResponse{Session: &sess, User: p.User})
	if err != nil {
		return nil, false
	}
	at := bytes.Index(raw, tokenField)
	if at < 0 {
		return nil, false
	}
	b := &sessionBody{json: append(raw, '\n'), tokenAt: at + len(tokenField)}
	p.Rendering.Store(b)
	return b, true
}

// plainToken reports whether token needs no escaping in JSON. Session
// tokens are made of letters and digits; anything else takes the
// encoder's road.
func plainToken(token string) bool {
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
