// Package mail is the one way the service sends email: a transactional
// outbox that other services write to inside their own database
// transaction, a delivery worker that sends what the outbox holds with
// retries, and the senders (SMTP, or the log in development).
//
// A message is composed (rendered to check it, then its template data
// sealed) before the transaction that enqueues it; the worker opens and
// renders it again at send time. The sealed data is purged once the message
// is sent or has expired, so the outbox never keeps a usable link longer
// than the link itself is valid.
package mail

import (
	"time"

	"github.com/google/uuid"
)

// Template names a kind of message. Each has a text and an HTML template
// embedded in the binary.
type Template string

// The templates.
const (
	// TemplateProfileChange asks the account owner to confirm a new name and nickname.
	TemplateProfileChange Template = "profile-change"
	// TemplateEmailChangeOld asks the owner of the current address to approve a new one.
	TemplateEmailChangeOld Template = "email-change-old"
	// TemplateEmailChangeNew asks the new address to confirm it receives mail.
	TemplateEmailChangeNew Template = "email-change-new"
	// TemplatePasswordChange asks the account owner to confirm a new password.
	TemplatePasswordChange Template = "password-change"
	// TemplateEmailChanged tells the old address that the email was changed.
	TemplateEmailChanged Template = "email-changed"
	// TemplatePasswordChanged tells the account owner the password was changed.
	TemplatePasswordChanged Template = "password-changed"
	// TemplateAccountLinked tells the account owner a sign-in provider was
	// linked to the account.
	TemplateAccountLinked Template = "account-linked"
	// TemplateAccountUnlinked tells the account owner a way of signing in
	// was removed from the account.
	TemplateAccountUnlinked Template = "account-unlinked"
	// TemplateVerifyEmail asks a new account to verify its address.
	TemplateVerifyEmail Template = "verify-email"
	// TemplateResetPassword carries a password-reset link.
	TemplateResetPassword Template = "reset-password"
	// TemplateSecurityChange tells the account owner that a sign-in factor
	// changed (Data.Change says which).
	TemplateSecurityChange Template = "security-change"
	// TemplateDeleteAccount asks the account owner to confirm its deletion.
	TemplateDeleteAccount Template = "delete-account"
	// TemplateAccountDeleted tells the former owner the account is gone.
	TemplateAccountDeleted Template = "account-deleted"
)

// Data is what a template may show. Every field is optional; each template
// uses the ones its message needs.
type Data struct {
	// Name greets the recipient (the account's display name); set it with
	// GreetingName.
	Name string `json:"name,omitempty"`
	// Link is the confirmation link; it carries a token, so it is sealed
	// in the outbox and logged only in development.
	Link string `json:"link,omitempty"`
	// ExpiresAt is when Link stops working.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Email is the account's current address.
	Email string `json:"email,omitempty"`
	// NewEmail is the address the account is moving to.
	NewEmail string `json:"newEmail,omitempty"`
	// Nickname is the account's current nickname.
	Nickname string `json:"nickname,omitempty"`
	// Change says what changed, in a security notice.
	Change string `json:"change,omitempty"`
	// NewName and NewNickname are a requested profile change.
	NewName     string `json:"newName,omitempty"`
	NewNickname string `json:"newNickname,omitempty"`
	// Provider names the sign-in provider linked or unlinked.
	Provider string `json:"provider,omitempty"`
}

// Outgoing is a composed message ready to be written to the outbox.
type Outgoing struct {
	ID       uuid.UUID
	Template Template
	To       string
	// Subject is kept in clear for the outbox listing; it never carries a token.
	Subject string
	// Payload is the sealed Data.
	Payload   []byte
	CreatedAt time.Time
	// ExpiresAt is when delivery stops being useful (the link's expiry);
	// the worker gives up then.
	ExpiresAt time.Time
}

// Status is where a message is in its life.
type Status string

// The statuses. pending and sending are live; the rest are final, except
// that support staff may retry a failed message.
const (
	StatusPending Status = "pending"
	StatusSending Status = "sending"
	StatusSent    Status = "sent"
	StatusFailed  Status = "failed"
	StatusExpired Status = "expired"
)

// Statuses lists every status in life order.
var Statuses = []Status{StatusPending, StatusSending, StatusSent, StatusFailed, StatusExpired}

// Message is an outbox row as support staff see it: no payload.
type Message struct {
	ID            uuid.UUID  `json:"id"`
	Template      Template   `json:"template"`
	To            string     `json:"to"`
	Subject       string     `json:"subject"`
	Status        Status     `json:"status"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt time.Time  `json:"nextAttemptAt"`
	LeaseOwner    string     `json:"leaseOwner,omitempty"`
	LastError     string     `json:"lastError"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	ExpiresAt     time.Time  `json:"expiresAt"`
	SentAt        *time.Time `json:"sentAt"`
}

// Outcome of one delivery attempt, as recorded in the attempt log.
type Outcome string

// The outcomes.
const (
	// OutcomeSending marks an attempt in progress (or cut short by a crash).
	OutcomeSending Outcome = "sending"
	OutcomeSent    Outcome = "sent"
	// OutcomeRetry is a temporary failure; the message is due again later.
	OutcomeRetry Outcome = "retry"
	// OutcomeFailed is a permanent failure (SMTP 5xx, unusable message).
	OutcomeFailed Outcome = "failed"
	// OutcomeInterrupted means the worker stopped mid-attempt and handed
	// the message back.
	OutcomeInterrupted Outcome = "interrupted"
	// OutcomeAbandoned marks an attempt whose worker lost its lease (it
	// died); another worker took the message over.
	OutcomeAbandoned Outcome = "abandoned"
)

// Attempt is one delivery attempt of a message.
type Attempt struct {
	Attempt    int        `json:"attempt"`
	Worker     string     `json:"worker"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	Outcome    Outcome    `json:"outcome"`
	SMTPCode   int        `json:"smtpCode"`
	Error      string     `json:"error"`
}

// Error codes of the mail area.
const (
	CodeMailNotRetryable = "MAIL_NOT_RETRYABLE"
	CodeMailExpired      = "MAIL_EXPIRED"
)

// GreetingName is the name a message may greet its recipient by: the
// account's display name when the address it goes to is verified as the
// account's, and none ("Hello there") otherwise. Anyone may sign up with
// someone else's address and any name, so a name is never mailed to an
// address whose owner has not shown the account is theirs. Subject lines
// carry no data at all.
func GreetingName(name string, addressVerified bool) string {
	if !addressVerified {
		return ""
	}
	return name
}
