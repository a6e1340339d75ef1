package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// TLS modes of an SMTP URL.
const (
	tlsStartTLS = "starttls" // smtp:// default: STARTTLS required
	tlsImplicit = "implicit" // smtps://
	tlsNone     = "none"     // smtp://…?tls=none: plain, for a local relay or test sink
)

// SMTPConfig configures an SMTPSender.
type SMTPConfig struct {
	// URL is PLATFORM_SMTP_URL: smtp://user:pass@host:587 (STARTTLS
	// required), smtps://user:pass@host:465 (implicit TLS) or
	// smtp://host:25?tls=none (no TLS).
	URL string
	// From is PLATFORM_MAIL_FROM, e.g. "Platform <no-reply@example.com>".
	From string
	// Timeout bounds connecting and each SMTP command (15s).
	Timeout time.Duration
	// TLSConfig overrides the TLS settings (tests pass their own CA). The
	// server name is always the URL's host.
	TLSConfig *tls.Config
}

// SMTPSender delivers through an SMTP server with github.com/wneessen/go-mail.
type SMTPSender struct {
	host     string
	port     int
	mode     string
	user     string
	pass     string
	from     *netmail.Address
	idDomain string
	timeout  time.Duration
	tls      *tls.Config
}

// NewSMTPSender validates cfg. It does not connect: the first delivery does.
func NewSMTPSender(cfg SMTPConfig) (*SMTPSender, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, errors.New("mail: PLATFORM_SMTP_URL is not a URL")
	}
	s := &SMTPSender{host: u.Hostname(), timeout: cfg.Timeout}
	if s.timeout <= 0 {
		s.timeout = 15 * time.Second
	}
	q := u.Query()
	switch u.Scheme {
	case "smtp":
		s.mode, s.port = tlsStartTLS, 587
		switch v := q.Get("tls"); v {
		case "", tlsStartTLS:
		case tlsNone:
			s.mode = tlsNone
		default:
			return nil, fmt.Errorf("mail: PLATFORM_SMTP_URL tls=%q: use tls=none for a plain connection, or leave it out for STARTTLS", v)
		}
	case "smtps":
		s.mode, s.port = tlsImplicit, 465
		if q.Has("tls") {
			return nil, errors.New("mail: PLATFORM_SMTP_URL: smtps:// is always implicit TLS; tls= applies to smtp:// only")
		}
	default:
		return nil, errors.New("mail: PLATFORM_SMTP_URL must start with smtp:// or smtps://")
	}
	for k := range q {
		if k != "tls" {
			return nil, fmt.Errorf("mail: PLATFORM_SMTP_URL: unknown parameter %q", k)
		}
	}
	if s.host == "" {
		return nil, errors.New("mail: PLATFORM_SMTP_URL has no host")
	}
	if p := u.Port(); p != "" {
		if s.port, err = strconv.Atoi(p); err != nil || s.port < 1 || s.port > 65535 {
			return nil, errors.New("mail: PLATFORM_SMTP_URL has an invalid port")
		}
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	from, err := netmail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("mail: PLATFORM_MAIL_FROM %q is not an address: %v", cfg.From, err)
	}
	s.from = from
	s.idDomain = "localhost"
	if at := strings.LastIndexByte(from.Address, '@'); at >= 0 && at < len(from.Address)-1 {
		s.idDomain = from.Address[at+1:]
	}
	if cfg.TLSConfig != nil {
		s.tls = cfg.TLSConfig.Clone()
	} else {
		s.tls = &tls.Config{}
	}
	s.tls.ServerName = s.host
	if s.tls.MinVersion < tls.VersionTLS12 {
		s.tls.MinVersion = tls.VersionTLS12
	}
	return s, nil
}

// String describes the server without credentials, for logs.
func (s *SMTPSender) String() string {
	return fmt.Sprintf("smtp %s (%s)", net.JoinHostPort(s.host, strconv.Itoa(s.port)), s.mode)
}

// Send delivers m in one SMTP conversation. Cancelling ctx aborts the
// conversation at once (the connection is closed), so a stopping worker
// never leaves a half-sent message behind: the server discards a DATA
// that did not end.
func (s *SMTPSender) Send(ctx context.Context, m *Rendered) error {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.from.String()); err != nil {
		return &DeliveryError{Permanent: true, Err: err}
	}
	if err := msg.To(m.To); err != nil {
		return &DeliveryError{Permanent: true, Err: fmt.Errorf("recipient: %w", err)}
	}
	msg.Subject(m.Subject)
	// The outbox id makes a re-send after an ambiguous failure (the server
	// took the message but the worker died before recording it) carry the
	// same Message-ID, so mail systems and people can tell it is one message.
	msg.SetMessageIDWithValue(m.ID.String() + "@" + s.idDomain)
	msg.SetDate()
	msg.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	msg.SetGenHeader(gomail.HeaderXAutoResponseSuppress, "All")
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)

	var (
		mu    sync.Mutex
		stops []func() bool
	)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, stop := range stops {
			stop()
		}
	}()
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: s.timeout}
		var conn net.Conn
		var err error
		if s.mode == tlsImplicit {
			conn, err = (&tls.Dialer{NetDialer: d, Config: s.tls}).DialContext(dctx, network, addr)
		} else {
			conn, err = d.DialContext(dctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		mu.Lock()
		stops = append(stops, context.AfterFunc(ctx, func() { conn.Close() }))
		mu.Unlock()
		return conn, nil
	}
	opts := []gomail.Option{
		gomail.WithPort(s.port),
		gomail.WithTimeout(s.timeout),
		gomail.WithDialContextFunc(dial),
		gomail.WithTLSConfig(s.tls),
		gomail.WithoutNoop(),
	}
	switch s.mode {
	case tlsImplicit:
		// The dialer already speaks TLS; WithSSL stops go-mail from also
		// trying STARTTLS.
		opts = append(opts, gomail.WithSSL())
	case tlsStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case tlsNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.user != "" {
		// PLAIN and LOGIN refuse to run over an unencrypted connection to
		// anything but localhost, so credentials never cross a network in
		// clear even with tls=none.
		opts = append(opts, gomail.WithUsername(s.user), gomail.WithPassword(s.pass),
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin))
	}
	client, err := gomail.NewClient(s.host, opts...)
	if err != nil {
		return &DeliveryError{Err: err}
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return classifySMTPError(err)
	}
	return nil
}

// classifySMTPError treats a 5xx reply to the message itself (MAIL FROM,
// RCPT TO, DATA) as permanent. Connection, TLS and authentication problems
// are temporary: they are the server's or the configuration's, and the
// message may go through once they are fixed.
func classifySMTPError(err error) error {
	var se *gomail.SendError
	if errors.As(err, &se) {
		code := se.ErrorCode()
		return &DeliveryError{Code: code, Permanent: code >= 500 && code < 600, Err: err}
	}
	return &DeliveryError{Err: err}
}
