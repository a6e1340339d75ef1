package mail

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"net/mail"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/google/uuid"
)

//go:embed templates/*.tmpl
var templateFiles embed.FS

// Templates lists every template the binary carries.
var Templates = []Template{
	TemplateProfileChange, TemplateEmailChangeOld, TemplateEmailChangeNew, TemplatePasswordChange,
	TemplateEmailChanged, TemplatePasswordChanged, TemplateVerifyEmail, TemplateResetPassword,
	TemplateAccountLinked, TemplateAccountUnlinked,
	TemplateSecurityChange,
	TemplateDeleteAccount, TemplateAccountDeleted,
}

// Rendered is a message ready for a sender.
type Rendered struct {
	ID      uuid.UUID
	To      string
	Subject string
	Text    string
	HTML    string
	// Link is the confirmation link, for senders that show it (the
	// development log); SMTP senders ignore it.
	Link string
}

var templateFuncs = map[string]any{
	"expires": func(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04 MST") },
}

type templatePair struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

func parseTemplates() (map[Template]templatePair, error) {
	out := make(map[Template]templatePair, len(Templates))
	for _, t := range Templates {
		text, err := texttemplate.New("").Funcs(templateFuncs).ParseFS(templateFiles,
			"templates/layout.txt.tmpl", "templates/"+string(t)+".txt.tmpl")
		if err != nil {
			return nil, fmt.Errorf("parse %s text template: %w", t, err)
		}
		html, err := htmltemplate.New("").Funcs(templateFuncs).ParseFS(templateFiles,
			"templates/layout.html.tmpl", "templates/"+string(t)+".html.tmpl")
		if err != nil {
			return nil, fmt.Errorf("parse %s HTML template: %w", t, err)
		}
		out[t] = templatePair{text: text, html: html}
	}
	return out, nil
}

// Composer renders and seals messages, and opens them again for sending.
// The sealing key is derived from the service secret, so a database dump
// alone reveals no link.
type Composer struct {
	aead      cipher.AEAD
	templates map[Template]templatePair
	now       func() time.Time
}

// payloadKeyLabel separates the sealing key from every other use of the secret.
const payloadKeyLabel = "platformctl mail payload v1"

// NewComposer returns a Composer keyed by secret.
func NewComposer(secret string, now func() time.Time) (*Composer, error) {
	if secret == "" {
		return nil, errors.New("mail: composer needs the service secret")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(payloadKeyLabel))
	block, err := aes.NewCipher(mac.Sum(nil))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	templates, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	return &Composer{aead: aead, templates: templates, now: now}, nil
}

// maxRecipientLen bounds an address (RFC 5321 path limit).
const maxRecipientLen = 254

// Compose renders the message once, so a broken template or address fails
// the caller's request rather than the delivery, and seals its data into a
// message that expires at expiresAt.
func (c *Composer) Compose(tmpl Template, to string, data Data, expiresAt time.Time) (*Outgoing, error) {
	if err := checkRecipient(to); err != nil {
		return nil, err
	}
	now := c.now().UTC()
	if !expiresAt.After(now) {
		return nil, fmt.Errorf("mail: %s message to be composed already expired", tmpl)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	r, err := c.render(id, tmpl, to, data)
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("mail: encode %s data: %w", tmpl, err)
	}
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plain)+c.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	// The message id is the additional data: a payload copied to another
	// row does not open.
	sealed := c.aead.Seal(nonce, nonce, plain, id[:])
	return &Outgoing{
		ID:        id,
		Template:  tmpl,
		To:        to,
		Subject:   r.Subject,
		Payload:   sealed,
		CreatedAt: now,
		ExpiresAt: expiresAt.UTC(),
	}, nil
}

// Open unseals a stored payload and renders the message for sending.
func (c *Composer) Open(id uuid.UUID, tmpl Template, to string, payload []byte) (*Rendered, error) {
	ns := c.aead.NonceSize()
	if len(payload) < ns {
		return nil, errors.New("mail: payload missing or truncated")
	}
	plain, err := c.aead.Open(nil, payload[:ns], payload[ns:], id[:])
	if err != nil {
		return nil, errors.New("mail: payload does not open with this secret")
	}
	var data Data
	if err := json.Unmarshal(plain, &data); err != nil {
		return nil, fmt.Errorf("mail: decode payload: %w", err)
	}
	return c.render(id, tmpl, to, data)
}

func (c *Composer) render(id uuid.UUID, tmpl Template, to string, data Data) (*Rendered, error) {
	pair, ok := c.templates[tmpl]
	if !ok {
		return nil, fmt.Errorf("mail: unknown template %q", tmpl)
	}
	var subject, text, html bytes.Buffer
	if err := pair.text.ExecuteTemplate(&subject, "subject", data); err != nil {
		return nil, fmt.Errorf("mail: render %s subject: %w", tmpl, err)
	}
	if err := pair.text.ExecuteTemplate(&text, "layout", data); err != nil {
		return nil, fmt.Errorf("mail: render %s text: %w", tmpl, err)
	}
	if err := pair.html.ExecuteTemplate(&html, "layout", data); err != nil {
		return nil, fmt.Errorf("mail: render %s HTML: %w", tmpl, err)
	}
	return &Rendered{
		ID:      id,
		To:      to,
		Subject: strings.TrimSpace(subject.String()),
		Text:    text.String(),
		HTML:    html.String(),
		Link:    data.Link,
	}, nil
}

// checkRecipient accepts a bare address only ("a@b.example"), so no display
// name or header folding can be smuggled into the envelope.
func checkRecipient(to string) error {
	if to == "" || len(to) > maxRecipientLen {
		return fmt.Errorf("mail: recipient address missing or too long")
	}
	a, err := mail.ParseAddress(to)
	if err != nil || a.Address != to || a.Name != "" {
		return fmt.Errorf("mail: recipient %q is not a bare address", to)
	}
	return nil
}
