package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection to the server, used by one
// virtual user at a time. It writes requests by hand and parses responses
// with net/http, so the load generator costs the shared CPUs as little as
// possible and "N connections" means exactly N sockets.
type conn struct {
	addr    string
	host    string
	origin  string
	timeout time.Duration

	c      net.Conn
	br     *bufio.Reader
	wbuf   bytes.Buffer
	body   bytes.Buffer
	reused bool
}

func newConn(base *url.URL, timeout time.Duration) *conn {
	addr := base.Host
	if base.Port() == "" {
		addr = net.JoinHostPort(base.Hostname(), "80")
	}
	return &conn{addr: addr, host: base.Host, origin: base.Scheme + "://" + base.Host, timeout: timeout}
}

// response is what a step sees of an answer; Body is valid until the
// connection's next request.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// request is a fully rendered request.
type request struct {
	Method string
	Path   string
	Header map[string]string
	Cookie string
	Body   []byte
}

// do sends req and reads the whole response. A request that finds its
// reused connection closed by the server before any byte of the answer
// is retried once on a fresh connection when it is a GET, as browsers
// and net/http do; anything else is reported.
func (c *conn) do(req *request) (*response, error) {
	res, err := c.roundTrip(req)
	if err != nil && c.reused && req.Method == http.MethodGet && isClosedBeforeAnswer(err) {
		c.close()
		res, err = c.roundTrip(req)
	}
	if err != nil {
		c.close()
	}
	return res, err
}

func (c *conn) roundTrip(req *request) (*response, error) {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return nil, err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true) //nolint:errcheck // best effort
		}
		c.c, c.br, c.reused = nc, bufio.NewReaderSize(nc, 16<<10), false
	} else {
		c.reused = true
	}
	c.c.SetDeadline(time.Now().Add(c.timeout)) //nolint:errcheck // a failed deadline shows up as an error below

	w := &c.wbuf
	w.Reset()
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(req.Path)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(c.host)
	w.WriteString("\r\nUser-Agent: platformctl-loadgen\r\nAccept: application/json\r\nOrigin: ")
	w.WriteString(c.origin)
	w.WriteString("\r\n")
	for k, v := range req.Header {
		w.WriteString(k)
		w.WriteString(": ")
		w.WriteString(v)
		w.WriteString("\r\n")
	}
	if req.Cookie != "" {
		w.WriteString("Cookie: ")
		w.WriteString(req.Cookie)
		w.WriteString("\r\n")
	}
	if req.Body != nil {
		w.WriteString("Content-Type: application/json\r\nContent-Length: ")
		w.WriteString(strconv.Itoa(len(req.Body)))
		w.WriteString("\r\n")
	} else if req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		w.WriteString("Content-Length: 0\r\n")
	}
	w.WriteString("\r\n")
	w.Write(req.Body)
	if _, err := c.c.Write(w.Bytes()); err != nil {
		return nil, &closedError{err}
	}

	if _, err := c.br.Peek(1); err != nil {
		return nil, &closedError{err}
	}
	hr, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, err
	}
	c.body.Reset()
	_, err = c.body.ReadFrom(hr.Body)
	hr.Body.Close()
	if err != nil {
		return nil, err
	}
	if hr.Close {
		c.close()
	}
	return &response{Status: hr.StatusCode, Header: hr.Header, Body: c.body.Bytes()}, nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// closedError marks a failure before any byte of the answer arrived.
type closedError struct{ err error }

func (e *closedError) Error() string { return e.err.Error() }
func (e *closedError) Unwrap() error { return e.err }

func isClosedBeforeAnswer(err error) bool {
	var ce *closedError
	return errors.As(err, &ce)
}

// jar keeps one virtual user's cookies, as a browser would for one site.
type jar struct {
	values map[string]string
	header string
}

func (j *jar) update(h http.Header) {
	lines := h.Values("Set-Cookie")
	if len(lines) == 0 {
		return
	}
	if j.values == nil {
		j.values = map[string]string{}
	}
	for _, ck := range (&http.Response{Header: http.Header{"Set-Cookie": lines}}).Cookies() {
		if ck.MaxAge < 0 || ck.Value == "" || (!ck.Expires.IsZero() && ck.Expires.Before(time.Now())) {
			delete(j.values, ck.Name)
			continue
		}
		j.values[ck.Name] = ck.Value
	}
	names := make([]string, 0, len(j.values))
	for n := range j.values {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + j.values[n]
	}
	j.header = strings.Join(parts, "; ")
}

// errorCode extracts the `code` of an error-model body for the report.
func errorCode(body []byte) string {
	i := bytes.Index(body, []byte(`"code":"`))
	if i < 0 {
		return ""
	}
	rest := body[i+8:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j > 64 {
		return ""
	}
	return string(rest[:j])
}

// describe names a failure for the error table without echoing bodies,
// which may hold tokens.
func describe(res *response, err error) string {
	if err != nil {
		msg := err.Error()
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return "timeout"
		case strings.Contains(msg, "connection refused"):
			return "connection refused"
		case strings.Contains(msg, "connection reset"):
			return "connection reset"
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return "connection closed"
		}
		return "transport: " + msg
	}
	if code := errorCode(res.Body); code != "" {
		return fmt.Sprintf("%d %s", res.Status, code)
	}
	return strconv.Itoa(res.Status)
}
