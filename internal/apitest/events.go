package apitest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/testwait"
)

// Event is one Server-Sent Event as a client reads it.
type Event struct {
	ID   string
	Type string
	Data string
}

// Decode unmarshals the event's data into v or fails the test.
func (e Event) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(e.Data), v); err != nil {
		tb.Fatalf("decode %s data %s: %v", e.Type, e.Data, err)
	}
}

// Stream is an open event stream read by a real HTTP client.
type Stream struct {
	// Retry is the reconnect delay the server suggested, as sent. The
	// server sends it before the first event, so it is set (and safe to
	// read) once Next has returned an event.
	Retry string
	// heartbeats counts the comment lines read.
	heartbeats atomic.Int64
	events     chan Event
	done       chan struct{}
	err        error
	cancel     context.CancelFunc
}

// OpenEvents opens GET /api/player/events with c's cookies, sending
// lastEventID when it is not empty, and returns the stream once the server
// answered 200; any other answer is returned as a Response.
func (c *Client) OpenEvents(lastEventID string) (*Stream, *Response) {
	c.tb.Helper()
	ctx, cancel := context.WithCancel(c.tb.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.srv.URL+"/api/player/events", nil)
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	stream := &http.Client{Jar: c.HTTP.Jar} // no overall timeout: the stream is long-lived
	res, err := stream.Do(req)
	if err != nil {
		cancel()
		c.tb.Fatalf("open events: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		defer cancel()
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body) //nolint:errcheck // the status tells
		r := &Response{Status: res.StatusCode, Header: res.Header, Body: raw}
		if err := validateResponse(req, r); err != nil {
			c.tb.Errorf("GET /api/player/events -> %d does not match the OpenAPI document: %v", r.Status, err)
		}
		return nil, r
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		c.tb.Errorf("events Content-Type = %q", ct)
	}
	s := &Stream{events: make(chan Event, 1024), done: make(chan struct{}), cancel: cancel}
	go s.read(res.Body)
	c.tb.Cleanup(s.Close)
	return s, nil
}

// read parses the stream until it ends.
func (s *Stream) read(body io.ReadCloser) {
	defer close(s.done)
	defer close(s.events)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			if line != "" {
				s.heartbeats.Add(1)
			}
			if line == "" && ev.Type != "" {
				s.events <- ev
				ev = Event{}
			}
		case "id":
			ev.ID = value
		case "event":
			ev.Type = value
		case "data":
			ev.Data += value
		case "retry":
			s.Retry = value
		}
	}
	s.err = sc.Err()
}

// Next returns the next event, failing the test if none comes within
// wait or the stream ends first.
func (s *Stream) Next(tb testing.TB, wait time.Duration) Event {
	tb.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			tb.Fatalf("the event stream ended (%v) while an event was expected", s.err)
		}
		return ev
	case <-time.After(wait):
		tb.Fatalf("no event within %s", wait)
	}
	return Event{}
}

// NextOf skips events until one of type typ, which it returns.
func (s *Stream) NextOf(tb testing.TB, typ string, wait time.Duration) Event {
	tb.Helper()
	return s.Until(tb, wait, "a "+typ+" event", func(ev Event) bool { return ev.Type == typ })
}

// Until skips events until match accepts one, which it returns, failing
// the test, with what it waited for, if none has within wait or the
// stream ends first. match sees every event on the way, so it can also
// collect them.
func (s *Stream) Until(tb testing.TB, wait time.Duration, what string, match func(Event) bool) Event {
	tb.Helper()
	timeout := time.After(wait)
	var skipped []string
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				tb.Fatalf("the event stream ended (%v) while waiting for %s; skipped %q", s.err, what, skipped)
			}
			if match(ev) {
				return ev
			}
			skipped = append(skipped, ev.Type)
		case <-timeout:
			tb.Fatalf("no %s within %s; skipped %q", what, wait, skipped)
		}
	}
}

// Ended waits for the server to end the stream and fails the test if an
// event other than those allowed arrives first or it does not end within
// wait.
func (s *Stream) Ended(tb testing.TB, wait time.Duration) {
	tb.Helper()
	timeout := time.After(wait)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			tb.Fatalf("got %s %s while waiting for the stream to end", ev.Type, ev.Data)
		case <-timeout:
			tb.Fatalf("the stream did not end within %s", wait)
		}
	}
}

// WaitHeartbeats waits until the stream has carried n comment lines.
func (s *Stream) WaitHeartbeats(tb testing.TB, n int64, wait time.Duration) {
	tb.Helper()
	testwait.Nil(tb, wait, func() error {
		if got := s.heartbeats.Load(); got < n {
			return fmt.Errorf("%d heartbeats, want %d", got, n)
		}
		return nil
	})
}

// Close stops reading and closes the connection.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}
