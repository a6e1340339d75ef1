// Package mailtest runs a real SMTP server in the test process
// (github.com/emersion/go-smtp) that keeps what it receives, so tests
// exercise the real SMTP sender and can read links out of delivered mail.
// It can refuse recipients, stall mid-conversation, require TLS or
// authentication, and stop and restart on the same address.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/towerdefence/platformctl/internal/testwait"
)

// TLS modes of the server.
const (
	TLSNone     = "none"     // plain; the sender must use ?tls=none
	TLSStartTLS = "starttls" // offers STARTTLS
	TLSImplicit = "implicit" // TLS from the first byte (smtps)
)

// Options shape a Server. The zero value is a plain server that accepts
// everything.
type Options struct {
	// TLS is TLSNone (default), TLSStartTLS or TLSImplicit.
	TLS string
	// Username and Password, when set, are required (AUTH PLAIN).
	Username, Password string
	// Reject, when it returns an error for a recipient, refuses RCPT TO
	// with it; use *smtp.SMTPError for a specific reply code.
	Reject func(rcpt string) error
	// Delay slows every RCPT TO down, to keep messages in flight longer.
	Delay time.Duration
}

// Message is one delivered message, parsed.
type Message struct {
	From      string
	To        []string
	MessageID string
	Subject   string
	Header    netmail.Header
	Text      string
	HTML      string
	Raw       []byte
}

// Server is a running in-process SMTP server.
type Server struct {
	tb   testing.TB
	opts Options
	addr string
	cert *x509.Certificate
	tls  *tls.Config

	mu       sync.Mutex
	srv      *smtp.Server
	messages []Message
	rcpts    []string // every RCPT TO, accepted or not
	stall    chan struct{}
	stalled  chan string
	changed  chan struct{}
	ended    int // SMTP sessions that have closed
}

// Start runs a server on a free loopback port until the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := &Server{tb: tb, opts: opts, changed: make(chan struct{})}
	if opts.TLS != "" && opts.TLS != TLSNone {
		s.cert, s.tls = selfSigned(tb)
	}
	l := s.listen(tb, "127.0.0.1:0")
	s.addr = l.Addr().String()
	s.serve(l)
	tb.Cleanup(s.Stop)
	return s
}

// ReserveAddr returns a loopback address with nothing listening on it, for
// a server started later with StartAt: a sender pointed there finds the
// server down.
func ReserveAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// StartAt is Start on a given address (from ReserveAddr).
func StartAt(tb testing.TB, addr string, opts Options) *Server {
	tb.Helper()
	s := &Server{tb: tb, opts: opts, addr: addr, changed: make(chan struct{})}
	if opts.TLS != "" && opts.TLS != TLSNone {
		s.cert, s.tls = selfSigned(tb)
	}
	s.serve(s.listen(tb, addr))
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) listen(tb testing.TB, addr string) net.Listener {
	var l net.Listener
	// A just-released port can linger briefly; retry for a moment.
	testwait.Nil(tb, time.Second, func() (err error) {
		if l, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("mailtest: listen on %s: %w", addr, err)
		}
		return nil
	})
	if s.opts.TLS == TLSImplicit {
		l = tls.NewListener(l, s.tls)
	}
	return l
}

func (s *Server) serve(l net.Listener) {
	srv := smtp.NewServer(&backend{s: s})
	srv.Domain = "mailtest.local"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 1 << 20
	srv.ErrorLog = discardLogger{}
	if s.opts.TLS == TLSStartTLS {
		srv.TLSConfig = s.tls
	}
	srv.AllowInsecureAuth = s.opts.TLS == "" || s.opts.TLS == TLSNone
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go srv.Serve(l) //nolint:errcheck // returns when stopped
}

// Stop shuts the server down (a later Restart brings it back on the same
// address). Stalled sessions are released.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	if s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Restart starts the stopped server again on its address.
func (s *Server) Restart() {
	s.tb.Helper()
	s.serve(s.listen(s.tb, s.addr))
}

// Addr is host:port.
func (s *Server) Addr() string { return s.addr }

// URL is a PLATFORM_SMTP_URL for this server.
func (s *Server) URL() string {
	userinfo := ""
	if s.opts.Username != "" {
		userinfo = s.opts.Username + ":" + s.opts.Password + "@"
	}
	switch s.opts.TLS {
	case TLSStartTLS:
		return "smtp://" + userinfo + s.addr
	case TLSImplicit:
		return "smtps://" + userinfo + s.addr
	}
	return "smtp://" + userinfo + s.addr + "?tls=none"
}

// ClientTLS trusts the server's certificate (nil for a plain server).
func (s *Server) ClientTLS() *tls.Config {
	if s.cert == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.cert)
	return &tls.Config{RootCAs: pool}
}

// StallRecipients makes every later RCPT TO hang until Release or Stop, so
// a test can stop the sender in the middle of a conversation. The
// returned channel receives each stalled recipient.
func (s *Server) StallRecipients() <-chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = make(chan struct{})
	s.stalled = make(chan string, 16)
	return s.stalled
}

// Release lets stalled sessions continue and stops stalling.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
}

// Messages returns what was delivered so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Recipients returns every RCPT TO the server saw, refused ones included.
func (s *Server) Recipients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rcpts...)
}

// WaitFor waits until a delivered message satisfies match and returns it,
// failing the test after timeout.
func (s *Server) WaitFor(tb testing.TB, timeout time.Duration, match func(Message) bool) Message {
	tb.Helper()
	return s.WaitForNth(tb, timeout, match, 1)
}

// WaitForNth waits until n delivered messages satisfy match and returns
// the n-th of them.
func (s *Server) WaitForNth(tb testing.TB, timeout time.Duration, match func(Message) bool, n int) Message {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		seen := 0
		for _, m := range s.messages {
			if match(m) {
				if seen++; seen == n {
					s.mu.Unlock()
					return m
				}
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("mailtest: no matching message within %s; have %d messages", timeout, len(s.Messages()))
			return Message{}
		}
	}
}

// WaitForCount waits until at least n messages were delivered.
func (s *Server) WaitForCount(tb testing.TB, timeout time.Duration, n int) []Message {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.messages) >= n {
			out := append([]Message(nil), s.messages...)
			s.mu.Unlock()
			return out
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("mailtest: %d messages within %s, want %d", len(s.Messages()), timeout, n)
			return nil
		}
	}
}

// WaitSessionsEnded waits until at least n SMTP sessions have closed. A
// closed session delivers nothing more, so a test that waits for it can
// assert on Messages without hoping a late delivery has settled.
func (s *Server) WaitSessionsEnded(tb testing.TB, timeout time.Duration, n int) {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ended, changed := s.ended, s.changed
		s.mu.Unlock()
		if ended >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("mailtest: %d sessions ended within %s, want %d", ended, timeout, n)
			return
		}
	}
}

// To matches messages addressed to addr.
func To(addr string) func(Message) bool {
	return func(m Message) bool {
		for _, t := range m.To {
			if strings.EqualFold(t, addr) {
				return true
			}
		}
		return false
	}
}

var tokenRE = regexp.MustCompile(`[?&]token=([0-9a-f]{64})\b`)

// Token returns the confirmation token in the message's link, or "".
func (m Message) Token() string {
	if g := tokenRE.FindStringSubmatch(m.Text); g != nil {
		return g[1]
	}
	return ""
}

var linkRE = regexp.MustCompile(`https?://\S+`)

// Link returns the first link in the text part, or "".
func (m Message) Link() string { return linkRE.FindString(m.Text) }

func (s *Server) record(from string, to []string, raw []byte) {
	m := parse(raw)
	m.From, m.To = from, to
	s.mu.Lock()
	s.messages = append(s.messages, m)
	s.signalLocked()
	s.mu.Unlock()
}

// signalLocked wakes the waiters; s.mu is held.
func (s *Server) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func parse(raw []byte) Message {
	m := Message{Raw: raw}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return m
	}
	m.Header = msg.Header
	m.MessageID = strings.Trim(msg.Header.Get("Message-ID"), "<>")
	dec := new(mime.WordDecoder)
	if subj, err := dec.DecodeHeader(msg.Header.Get("Subject")); err == nil {
		m.Subject = subj
	}
	collectParts(&m, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	return m
}

func collectParts(m *Message, contentType, encoding string, body io.Reader) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				return
			}
			collectParts(m, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p)
		}
	}
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, _ := io.ReadAll(body)
	switch mt {
	case "text/plain":
		m.Text = string(b)
	case "text/html":
		m.HTML = string(b)
	}
}

type backend struct{ s *Server }

func (b *backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

func (se *session) AuthMechanisms() []string {
	if se.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != se.s.opts.Username || password != se.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.opts.Username != "" && !se.authed {
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.s.mu.Lock()
	se.s.rcpts = append(se.s.rcpts, to)
	stall, stalled := se.s.stall, se.s.stalled
	se.s.mu.Unlock()
	if se.s.opts.Delay > 0 {
		// The slowness is what the test asked for, not a wait for something.
		time.Sleep(se.s.opts.Delay)
	}
	if stall != nil {
		select {
		case stalled <- to:
		default:
		}
		<-stall
	}
	if se.s.opts.Reject != nil {
		if err := se.s.opts.Reject(to); err != nil {
			return err
		}
	}
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	se.s.record(se.from, se.to, raw)
	return nil
}

func (se *session) Reset() { se.from, se.to = "", nil }

func (se *session) Logout() error {
	se.s.mu.Lock()
	se.s.ended++
	se.s.signalLocked()
	se.s.mu.Unlock()
	return nil
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}

// selfSigned makes a certificate for 127.0.0.1 and localhost.
func selfSigned(tb testing.TB) (*x509.Certificate, *tls.Config) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mailtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return cert, &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}
}

// Refuse returns an SMTP error with code, for Options.Reject.
func Refuse(code int, msg string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: smtp.NoEnhancedCode, Message: msg}
}
