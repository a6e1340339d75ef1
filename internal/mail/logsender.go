package mail

import (
	"context"
	"log/slog"
)

// LogSender is the development stand-in for SMTP: it writes each message's
// recipient, subject and link to the log at info level, so a developer
// without a mail server can still follow every flow. Mail is never dropped
// silently. Production requires PLATFORM_SMTP_URL, so it never uses this.
type LogSender struct {
	Log *slog.Logger
	// ShowLinks logs the link itself. The link carries a token, so only
	// development turns it on.
	ShowLinks bool
}

// Send implements Sender.
func (s LogSender) Send(ctx context.Context, m *Rendered) error {
	link := m.Link
	if !s.ShowLinks && link != "" {
		link = "(hidden: links are logged only in development)"
	}
	s.Log.InfoContext(ctx, "mail: no SMTP server configured; message logged instead of sent",
		"message_id", m.ID, "to", m.To, "subject", m.Subject, "link", link)
	return nil
}
