package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// sseEvent is one event as read off the wire, with its arrival time.
type sseEvent struct {
	Type, Data string
	At         time.Time
}

// stream is one event stream on its own TCP connection, read with a plain
// bufio.Reader so that 10,000 of them stay cheap on the client side too.
type stream struct {
	conn net.Conn
	r    *bufio.Reader
}

// openStream sends GET /api/player/events with cookie and reads up to the
// end of the response headers.
func openStream(ctx context.Context, base, cookie string) (*stream, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	req := "GET /api/player/events HTTP/1.1\r\nHost: " + u.Host + "\r\nAccept: text/event-stream\r\nCookie: " + cookie + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		conn.Close()
		return nil, err
	}
	s := &stream{conn: conn, r: bufio.NewReaderSize(conn, 2048)}
	status, err := s.r.ReadString('\n')
	if err != nil {
		conn.Close()
		return nil, err
	}
	if !strings.Contains(status, " 200 ") {
		conn.Close()
		return nil, fmt.Errorf("events: %s", strings.TrimSpace(status))
	}
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			conn.Close()
			return nil, err
		}
		if line == "\r\n" {
			return s, nil
		}
	}
}

// read calls onEvent for each event and onComment for each comment line
// until the connection ends. The body is chunked; chunk-size lines are
// recognised and skipped (an SSE line never is a bare hex number).
func (s *stream) read(onEvent func(sseEvent), onComment func(time.Time)) error {
	var ev sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, ": "):
			onComment(time.Now())
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.Data = line[len("data: "):]
			ev.At = time.Now()
			onEvent(ev)
			ev = sseEvent{}
		}
	}
}

func (s *stream) Close() error { return s.conn.Close() }
