package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// sink is an SMTP server that accepts every message and hands each one to
// whoever waits for mail to its recipient, so a flow can read the token
// the service mailed. Messages nobody waits for are queued per recipient.
type sink struct {
	srv *smtp.Server
	ln  net.Listener

	mu    sync.Mutex
	boxes map[string]chan string

	received atomic.Int64
	// ids counts deliveries per Message-ID, to spot a message sent twice.
	idsMu sync.Mutex
	ids   map[string]int
}

func startSink(addr string) (*sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &sink{ln: ln, boxes: map[string]chan string{}, ids: map[string]int{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &sinkSession{s: s}, nil
	}))
	srv.Domain = "loadgen.local"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 1 << 20
	srv.MaxRecipients = 10
	srv.AllowInsecureAuth = true
	srv.ErrorLog = quietLog{}
	s.srv = srv
	go srv.Serve(ln) //nolint:errcheck // ends when closed
	return s, nil
}

func (s *sink) Addr() string { return s.ln.Addr().String() }

func (s *sink) Close() { s.srv.Close() }

func (s *sink) box(rcpt string) chan string {
	rcpt = strings.ToLower(strings.TrimSpace(rcpt))
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.boxes[rcpt]
	if b == nil {
		b = make(chan string, 64)
		s.boxes[rcpt] = b
	}
	return b
}

// await returns the decoded text of the next message to rcpt.
func (s *sink) await(rcpt string, timeout time.Duration) (string, error) {
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case m := <-s.box(rcpt):
		return m, nil
	case <-t.C:
		return "", errors.New("no mail within " + timeout.String())
	}
}

// duplicates returns how many Message-IDs arrived more than once.
func (s *sink) duplicates() int {
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	n := 0
	for _, c := range s.ids {
		if c > 1 {
			n++
		}
	}
	return n
}

func (s *sink) deliver(rcpts []string, raw []byte) {
	s.received.Add(1)
	text := decodeMessage(raw)
	if msg, err := netmail.ReadMessage(bytes.NewReader(raw)); err == nil {
		if id := msg.Header.Get("Message-Id"); id != "" {
			s.idsMu.Lock()
			s.ids[id]++
			s.idsMu.Unlock()
		}
	}
	for _, r := range rcpts {
		select {
		case s.box(r) <- text:
		default: // nobody reads this box; keep the sink's memory bounded
		}
	}
}

type sinkSession struct {
	s     *sink
	rcpts []string
}

func (ss *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.deliver(ss.rcpts, raw)
	return nil
}

func (ss *sinkSession) Reset()        { ss.rcpts = nil }
func (ss *sinkSession) Logout() error { return nil }

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}
func (quietLog) Println(...any)        {}

// decodeMessage returns the decoded text of every text part of a MIME
// message, so a link that quoted-printable wrapped over two lines reads
// whole again.
func decodeMessage(raw []byte) string {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return string(raw)
	}
	var out strings.Builder
	collectText(&out, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0)
	return out.String()
}

func collectText(out *strings.Builder, ctype, encoding string, body io.Reader, depth int) {
	if depth > 5 {
		return
	}
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				return
			}
			collectText(out, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, depth+1)
		}
	}
	if !strings.HasPrefix(mt, "text/") {
		return
	}
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, &crlfStripper{r: body})
	}
	b, _ := io.ReadAll(body)
	out.Write(b)
	out.WriteByte('\n')
}

// crlfStripper drops line breaks so base64 bodies decode.
type crlfStripper struct{ r io.Reader }

func (c *crlfStripper) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	j := 0
	for i := 0; i < n; i++ {
		if p[i] != '\r' && p[i] != '\n' {
			p[j] = p[i]
			j++
		}
	}
	return j, err
}
