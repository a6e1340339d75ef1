package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// answer is a response made once and served as it is to every request
// it fits: routes that answer everyone the same bytes (the API's
// documents, the queues, the catalog, the service's metadata) make it
// when what they serve changes, not per request. Its header values are
// shared by every response: a header value slice is only ever replaced
// or appended to (which copies it), never written in place. Encoding
// the body and setting six headers one by one per request cost 1.1 µs and
// 7 allocations of the 5.3 µs the stack took on the queues route in
// BenchmarkQueuesPipeline; `scripts/bench.sh side` measures each route
// against a bare handler serving the same bytes.
type answer struct {
	status int
	body   []byte
	// Header values; nil ones are not sent.
	contentType, length, etag, cacheControl, vary, encoding []string
}

// answerOptions are an answer's optional headers.
type answerOptions struct {
	etag, cacheControl string
	// varyOnEncoding says the answer is one of a plain and a compressed
	// pair (queuesAnswers), so caches must key it by Accept-Encoding.
	varyOnEncoding bool
	gzip           bool // the body is gzip-compressed
}

// Header values answers share.
var (
	applicationJSON    = []string{"application/json"}
	varyAcceptEncoding = []string{"Accept-Encoding"}
	gzipEncoding       = []string{"gzip"}
)

// newAnswer returns the answer of body, of media type contentType.
func newAnswer(contentType string, body []byte, o answerOptions) *answer {
	a := &answer{status: http.StatusOK, body: body, contentType: []string{contentType},
		length: []string{strconv.Itoa(len(body))}}
	if contentType == "application/json" {
		a.contentType = applicationJSON
	}
	if o.etag != "" {
		a.etag = []string{o.etag}
	}
	if o.cacheControl != "" {
		a.cacheControl = []string{o.cacheControl}
	}
	if o.varyOnEncoding {
		a.vary = varyAcceptEncoding
	}
	if o.gzip {
		a.encoding = gzipEncoding
	}
	return a
}

// jsonAnswer returns the answer of v encoded as respond encodes it. A
// value that cannot be encoded is a programming error, answered as
// respond answers it: INTERNAL_ERROR.
func jsonAnswer(v any, o answerOptions) *answer {
	body, err := json.Marshal(v)
	if err != nil {
		a := newAnswer("application/json", []byte(unencodableBody+"\n"), answerOptions{})
		a.status = http.StatusInternalServerError
		return a
	}
	return newAnswer("application/json", append(body, '\n'), o)
}

// serve writes a: 304 without a body when the request's If-None-Match
// names its tag, the headers alone for HEAD.
func (a *answer) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setShared(h, "Etag", a.etag)
	setShared(h, "Cache-Control", a.cacheControl)
	setShared(h, "Vary", a.vary)
	if a.etag != nil && etagMatches(r.Header.Get("If-None-Match"), a.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"], h["Content-Length"] = a.contentType, a.length
	setShared(h, "Content-Encoding", a.encoding)
	w.WriteHeader(a.status)
	if r.Method == http.MethodHead {
		return
	}
	w.Write(a.body) //nolint:errcheck // the client went away
}

// setShared sets the canonical header key to a shared value slice, if
// there is one.
func setShared(h http.Header, key string, v []string) {
	if v != nil {
		h[key] = v
	}
}

// handleFixedJSON answers every request with v, encoded on the first.
func handleFixedJSON(v func() any) http.Handler {
	a := sync.OnceValue(func() *answer { return jsonAnswer(v(), answerOptions{}) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a().serve(w, r) })
}

// latestAnswers keeps what a route made of the value its service last
// handed it (a snapshot, a catalog version), made again only when the
// service hands out another value. Two requests that see a new value at
// once may both make its answers; either result is kept.
type latestAnswers[K comparable, A any] struct {
	latest atomic.Pointer[madeOf[K, A]]
	make   func(K) A
}

type madeOf[K comparable, A any] struct {
	key     K
	answers A
}

func (l *latestAnswers[K, A]) of(key K) A {
	if m := l.latest.Load(); m != nil && m.key == key {
		return m.answers
	}
	m := &madeOf[K, A]{key: key, answers: l.make(key)}
	l.latest.Store(m)
	return m.answers
}
