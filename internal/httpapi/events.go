package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/events"
)

// eventsPath is the player's event stream, the one long-lived route.
const eventsPath = "/api/player/events"

type streamCtxKey struct{}

// setupDeadline gives a stream's setup (the session lookup and the
// snapshot) the request timeout the deadline step skipped, and keeps the
// request's own context for the stream itself (see streamContext).
func setupDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		long := r.Context()
		ctx, cancel := context.WithTimeout(context.WithValue(long, streamCtxKey{}, long), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// streamContext returns the request's context without the setup deadline.
func streamContext(r *http.Request) context.Context {
	if long, ok := r.Context().Value(streamCtxKey{}).(context.Context); ok {
		return long
	}
	return r.Context()
}

// requestTimeout is the configured request timeout, or a minute when the
// handler runs without configuration (tests).
func (d Deps) requestTimeout() time.Duration {
	if d.Config != nil && d.Config.RequestTimeout > 0 {
		return d.Config.RequestTimeout
	}
	return time.Minute
}

// StreamTimings are the event stream's clocks.
type StreamTimings struct {
	// Heartbeat is the interval of comment lines that keep proxies and
	// clients from timing the stream out.
	Heartbeat time.Duration
	// WriteTimeout bounds each write, so that a client that stops reading
	// releases its stream instead of holding memory.
	WriteTimeout time.Duration
	// Retry is the reconnect delay suggested to clients.
	Retry time.Duration
}

func (t StreamTimings) withDefaults() StreamTimings {
	if t.Heartbeat <= 0 {
		t.Heartbeat = 15 * time.Second
	}
	if t.WriteTimeout <= 0 {
		t.WriteTimeout = 10 * time.Second
	}
	if t.Retry <= 0 {
		t.Retry = 2 * time.Second
	}
	return t
}

// handleEvents serves GET /api/player/events as Server-Sent Events: a
// snapshot first (on every connect, with or without Last-Event-ID), then
// the player's lobby, social and session events, with heartbeats.
//
// Once the snapshot is out, the connection is taken over from net/http
// (hijacked) and served by a fresh goroutine that writes the rest of the
// chunked body itself: the request's goroutine, its stack grown by the
// setup's database calls, and net/http's per-connection buffers are
// released, which roughly halves the memory an idle stream holds.
func handleEvents(d Deps) http.Handler {
	t := d.StreamTimings.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Events == nil {
			respondErr(w, r, d.Log, events.ErrTooMany)
			return
		}
		p := principalFrom(r)
		stream, err := d.Events.Open(p)
		if err != nil {
			respondErr(w, r, d.Log, err)
			return
		}
		first, err := snapshotEvent(r.Context(), d, p.User.ID)
		if err != nil {
			d.Events.Close(stream, events.EndedSetup)
			respondErr(w, r, d.Log, err)
			return
		}
		stream.Admit(first)
		sw := newSSEWriter(w, t.WriteTimeout)
		if err := sw.start(t.Retry, first); err != nil {
			d.Events.Close(stream, events.EndedSetup)
			return
		}
		stream.Written(first)
		// The stream outlives the request: it ends with its own events,
		// never with the request's context. Nor does it keep that context:
		// the request's state, net/http's connection and its 8 KiB of read
		// and write buffers hang from it, and would stay alive as long as
		// the stream after the hijack.
		ctx := context.Background()
		if cw, err := hijack(w, t.WriteTimeout); err == nil {
			d.Events.Go(func() {
				defer cw.close()
				serveStream(ctx, d, t, stream, cw)
			})
			return
		}
		serveStream(streamContext(r), d, t, stream, sw) // HTTP/2: stay on this goroutine
	})
}

func snapshotEvent(ctx context.Context, d Deps, playerID uuid.UUID) (events.Event, error) {
	snap, err := d.Players.SnapshotOf(ctx, playerID)
	if err != nil {
		return events.Event{}, err
	}
	return d.Events.SnapshotEvent(snap)
}

// eventWriter writes the stream after its start.
type eventWriter interface {
	event(ev events.Event) error
	comment(text string) error
}

// serveStream writes a stream's events and heartbeats until it ends: by
// its own final event, a failed write, ctx, or its session's expiry.
func serveStream(ctx context.Context, d Deps, t StreamTimings, stream *events.Stream, w eventWriter) {
	ended := events.EndedClientGone // unless the hub ended it, or the session expired
	defer func() { d.Events.Close(stream, ended) }()
	send := func(ev events.Event) error {
		err := w.event(ev)
		if err == nil {
			stream.Written(ev)
		}
		return err
	}
	p := stream.Principal
	expiry := time.NewTimer(time.Until(p.Session.ExpiresAt))
	defer expiry.Stop()
	heartbeat := time.NewTicker(t.Heartbeat)
	defer heartbeat.Stop()
	var err error
	for err == nil {
		select {
		case <-ctx.Done():
			return
		case ev := <-stream.Events():
			if stream.Admit(ev) {
				err = send(ev)
			}
		case <-heartbeat.C:
			err = w.comment("heartbeat")
		case <-expiry.C:
			// A remembered session slides forward as its player uses it
			// elsewhere: look again before calling it expired.
			if live, lerr := d.Auth.SessionLive(ctx, p); lerr != nil || live {
				expiry.Reset(sessionRecheck)
				continue
			}
			ended = events.EndedSession
			ev, _ := d.Events.NewEvent(events.TypeSessionEnded, events.SessionEnded{Reason: "expired"}) //nolint:errcheck // strings encode
			send(ev)                                                                                    //nolint:errcheck // the stream ends either way
			return
		case <-stream.Done():
			if final := stream.Final(); final != nil {
				send(*final) //nolint:errcheck // the stream ends either way
			}
			return
		}
	}
}

// chunkWriter writes the rest of a hijacked chunked response.
type chunkWriter struct {
	conn    net.Conn
	timeout time.Duration
	buf     []byte
}

// hijack takes the connection over from net/http after the headers and
// first chunks went out. It fails on HTTP/2, which cannot be hijacked.
func hijack(w http.ResponseWriter, timeout time.Duration) (*chunkWriter, error) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil { // the server's deadlines no longer apply
		conn.Close()
		return nil, err
	}
	return &chunkWriter{conn: conn, timeout: timeout}, nil
}

func (c *chunkWriter) event(ev events.Event) error {
	return c.chunk(appendEvent(nil, ev))
}

// comment writes a comment line: the heartbeat. It first looks whether
// the client has gone (see peerGone), and ends the stream if so.
func (c *chunkWriter) comment(text string) error {
	if c.peerGone() {
		return errPeerGone
	}
	return c.chunk([]byte(": " + text + "\n\n"))
}

var errPeerGone = errors.New("the client closed the connection")

// peerGone reports whether the client has closed its end. Nothing reads
// a stream after the hijack, so without this a closed client is found by
// the second write after it left (the kernel takes the first) and holds
// its place under the caps for two heartbeats. A client sends nothing on
// a stream: a read that ends at once with the end of the stream or an
// error, rather than at its brief deadline, means it is gone.
func (c *chunkWriter) peerGone() bool {
	if err := c.conn.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		return true
	}
	var b [1]byte
	_, err := c.conn.Read(b[:])
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// chunk writes payload as one chunk of the chunked body.
func (c *chunkWriter) chunk(payload []byte) error {
	c.buf = strconv.AppendInt(c.buf[:0], int64(len(payload)), 16)
	c.buf = append(append(append(c.buf, "\r\n"...), payload...), "\r\n"...)
	if err := c.conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	_, err := c.conn.Write(c.buf)
	if cap(c.buf) > 512 {
		c.buf = nil // an idle stream keeps no event's worth of buffer
	}
	return err
}

// close ends the chunked body and the connection.
func (c *chunkWriter) close() {
	c.conn.SetWriteDeadline(time.Now().Add(c.timeout)) //nolint:errcheck // closing anyway
	c.conn.Write([]byte("0\r\n\r\n"))                  //nolint:errcheck // closing anyway
	c.conn.Close()
}

// sessionRecheck is how soon a stream looks at its session again when it
// outlived the expiry it started with.
const sessionRecheck = 10 * time.Minute

// sseWriter writes the text/event-stream format, each write flushed and
// bounded by a deadline.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// start sends the headers, the retry hint and the first event. The
// server's read deadline is lifted: it would otherwise cancel the
// request once the stream outlives it.
func (s *sseWriter) start(retry time.Duration, first events.Event) error {
	if err := s.rc.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.buf = append(s.buf[:0], "retry: "...)
	s.buf = strconv.AppendInt(s.buf, retry.Milliseconds(), 10)
	s.buf = append(s.buf, "\n\n"...)
	s.buf = appendEvent(s.buf, first)
	return s.flush()
}

func appendEvent(b []byte, ev events.Event) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, ev.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	b = append(b, ev.Data...) // JSON from encoding/json holds no newline
	return append(b, "\n\n"...)
}

func (s *sseWriter) event(ev events.Event) error {
	s.buf = appendEvent(s.buf[:0], ev)
	return s.flush()
}

func (s *sseWriter) comment(text string) error {
	s.buf = append(append(append(s.buf[:0], ": "...), text...), "\n\n"...)
	return s.flush()
}

func (s *sseWriter) flush() error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil {
		return err
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	s.buf = s.buf[:0]
	if cap(s.buf) > 512 {
		s.buf = nil // an idle stream keeps no event's worth of buffer
	}
	return s.rc.Flush()
}
