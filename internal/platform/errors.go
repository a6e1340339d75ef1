// Package platform holds the vocabulary every other package shares: the
// error model that the API, the CLI and the services agree on.
package platform

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// Kind classifies an error by what the caller can do about it. The HTTP layer
// maps kinds to status codes and the CLI maps them to exit codes; services
// only choose a kind and a stable code.
type Kind uint8

// The kinds of expected failure.
const (
	KindInternal        Kind = iota // a bug or an outage; never shown in detail
	KindInvalid                     // the input is wrong (400)
	KindUnauthenticated             // no valid credentials (401)
	KindForbidden                   // credentials valid, action not allowed (403)
	KindNotFound                    // no such thing, or not visible to the caller (404)
	KindConflict                    // the state changed under the caller (409)
	KindUnprocessable               // well-formed but refused by a rule (422)
	KindRateLimited                 // too many attempts (429)
	KindUnavailable                 // a dependency is down; try again later (503)
)

// Stable error codes shared by several packages. Packages define their own
// codes next to the rules that raise them.
const (
	CodeInternal        = "INTERNAL_ERROR"
	CodeValidation      = "VALIDATION_ERROR"
	CodeNotFound        = "NOT_FOUND"
	CodeUnauthorized    = "UNAUTHORIZED"
	CodeForbidden       = "FORBIDDEN"
	CodeRateLimited     = "RATE_LIMITED"
	CodeUnavailable     = "SERVICE_UNAVAILABLE"
	CodeConflict        = "CONFLICT"
	CodeInvalidArgument = "INVALID_ARGUMENT"

	// CodeSessionNotFresh: the action needs a session signed in within
	// the fresh age, or the password or second factor again.
	CodeSessionNotFresh = "SESSION_NOT_FRESH"
	// CodeSecondFactorRequired: the account must enrol a second factor
	// before it may do this (administrators in production).
	CodeSecondFactorRequired = "SECOND_FACTOR_REQUIRED"
	// An account's end: suspension, deletion.
	CodeAccountSuspended = "ACCOUNT_SUSPENDED"
	CodeAccountDeleted   = "ACCOUNT_DELETED"
)

// Error is an expected failure with a stable, machine-readable code. Its
// Message is safe to show to the caller; Err, the cause, is not.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	// Fields holds the problem per input field (by its JSON name) of a
	// VALIDATION_ERROR; the API shows it as details.fields.
	Fields FieldErrors
	// Details are further facts a client can act on, by stable key.
	Details map[string]any
	// RetryAfter, when set, tells the caller how long to wait (rate limits).
	RetryAfter time.Duration
	// Err is the underlying cause, kept for logs and errors.Is.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind and code with a formatted message.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e with key set to value in its details.
func (e *Error) WithDetails(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// Wrap returns a copy of e that records cause for logs and errors.Is.
func (e *Error) Wrap(cause error) *Error {
	c := *e
	c.Err = cause
	return &c
}

// FieldErrors collects per-field validation problems, keyed by the field's
// JSON name.
type FieldErrors map[string]string

// Add records a problem with field; the first problem per field wins.
func (f FieldErrors) Add(field, problem string) {
	if _, ok := f[field]; !ok {
		f[field] = problem
	}
}

// First returns the alphabetically first field with a problem, and the
// problem; two empty strings when there is none.
func (f FieldErrors) First() (field, problem string) {
	for k := range f {
		if field == "" || k < field {
			field = k
		}
	}
	return field, f[field]
}

// Err returns nil when there are no problems, else a VALIDATION_ERROR whose
// message names the first field (alphabetically) and whose Fields list all.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	field, problem := f.First()
	return &Error{
		Kind:    KindInvalid,
		Code:    CodeValidation,
		Message: field + ": " + problem,
		Fields:  maps.Clone(f),
	}
}

// Invalid returns a VALIDATION_ERROR for a single field.
func Invalid(field, problem string) error {
	return FieldErrors{field: problem}.Err()
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var pe *Error
	ok := errors.As(err, &pe)
	return pe, ok
}

// ErrorCode returns the code of the *Error in err's chain, CodeInternal for
// any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if pe, ok := As(err); ok {
		return pe.Code
	}
	return CodeInternal
}

// IsKind reports whether err carries an *Error of the given kind.
func IsKind(err error, kind Kind) bool {
	pe, ok := As(err)
	return ok && pe.Kind == kind
}
