package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Search fields.
const (
	FieldEmail    = "email"
	FieldNickname = "nickname"
)

// Search is one page of a prefix search, as the store runs it.
type Search struct {
	Field  string // FieldEmail or FieldNickname
	Prefix string // lower-case
	After  string // the last key of the previous page, "" for the first
	Limit  int
}

// UserSummary is a player as search results show it.
type UserSummary struct {
	ID            uuid.UUID `json:"id"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	Nickname      string    `json:"nickname"`
	EmailVerified bool      `json:"emailVerified"`
	CreatedAt     time.Time `json:"createdAt"`
}

// UserPage is one page of search results; NextCursor is absent on the last.
type UserPage struct {
	Users      []UserSummary `json:"users"`
	NextCursor *string       `json:"nextCursor"`
}

// UserQuery is what an administrator searches for.
type UserQuery struct {
	// Query is a player id, an email prefix (it holds "@", or starts with
	// "email:") or a nickname prefix (anything else, or "nickname:").
	Query  string
	Cursor string
	Limit  int
}

// DefaultPageSize and MaxPageSize bound every list of this package.
const (
	DefaultPageSize = 25
	MaxPageSize     = 100
)

// SearchUsers finds players by id, email prefix or nickname prefix, a
// page at a time in email or nickname order. Every search reads one range
// of a unique index, so its cost does not grow with the number of players.
func (s *Service) SearchUsers(ctx context.Context, q UserQuery) (*UserPage, error) {
	limit, err := pageSize(q.Limit)
	if err != nil {
		return nil, err
	}
	query := strings.TrimSpace(q.Query)
	if err := checkText("query", query); err != nil {
		return nil, err
	}
	if id, err := uuid.Parse(query); err == nil {
		return s.userByID(ctx, id)
	}
	search := Search{Field: FieldNickname, Prefix: query, Limit: limit + 1}
	if p, ok := strings.CutPrefix(query, "email:"); ok {
		search.Field, search.Prefix = FieldEmail, p
	} else if p, ok := strings.CutPrefix(query, "nickname:"); ok {
		search.Prefix = p
	} else if strings.Contains(query, "@") {
		search.Field = FieldEmail
	}
	search.Prefix = strings.ToLower(strings.TrimSpace(search.Prefix))
	if search.Prefix == "" {
		return nil, platform.Invalid("query", "give a player id, or the start of an email or a nickname")
	}
	if q.Cursor != "" {
		var c userCursor
		if err := decodeCursor(q.Cursor, &c); err != nil || c.Field != search.Field {
			return nil, errBadCursor
		}
		search.After = c.After
	}
	users, err := s.d.Store.SearchUsers(ctx, search)
	if err != nil {
		return nil, err
	}
	page := &UserPage{Users: users}
	if len(users) > limit {
		page.Users = users[:limit]
		last := page.Users[limit-1]
		key := last.Email
		if search.Field == FieldNickname {
			key = account.NicknameKey(last.Nickname)
		}
		next := encodeCursor(userCursor{Field: search.Field, After: key})
		page.NextCursor = &next
	}
	if page.Users == nil {
		page.Users = []UserSummary{}
	}
	return page, nil
}

func (s *Service) userByID(ctx context.Context, id uuid.UUID) (*UserPage, error) {
	u, err := s.d.Auth.Accounts().ByID(ctx, id)
	if platform.ErrorCode(err) == account.CodeUserNotFound || (err == nil && u.Realm != account.RealmPlayer) {
		return &UserPage{Users: []UserSummary{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return &UserPage{Users: []UserSummary{SummaryOf(u)}}, nil
}

// SummaryOf is the line a search shows of u.
func SummaryOf(u *account.User) UserSummary {
	return UserSummary{ID: u.ID, Email: u.Email, Name: u.Name, Nickname: u.Nickname, EmailVerified: u.EmailVerified, CreatedAt: u.CreatedAt}
}

// Counts are what a player owns, as the user detail shows them.
type Counts struct {
	Decks            int64 `json:"decks"`
	Friends          int64 `json:"friends"`
	IncomingRequests int64 `json:"incomingRequests"`
	OutgoingRequests int64 `json:"outgoingRequests"`
	Blocked          int64 `json:"blocked"`
}

// SessionView is a session as support staff see it: never its token.
type SessionView struct {
	ID        uuid.UUID `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	IPAddress string    `json:"ipAddress"`
	UserAgent string    `json:"userAgent"`
}

// UserDetail is everything support staff see of one player.
type UserDetail struct {
	User     *account.User `json:"user"`
	Sessions []SessionView `json:"sessions"`
	Counts   Counts        `json:"counts"`
}

// User returns one player's profile, live sessions and counts. The look
// is audited (as sessions.list, by auth).
func (s *Service) User(ctx context.Context, actor string, id uuid.UUID) (*UserDetail, error) {
	u, sessions, err := s.d.Auth.SupportListSessions(ctx, actor, account.RealmPlayer, id.String())
	if err != nil {
		return nil, err
	}
	counts, err := s.d.Store.UserCounts(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	return &UserDetail{User: u, Sessions: SessionViews(sessions), Counts: counts}, nil
}

// SessionViews are sessions without their tokens.
func SessionViews(list []auth.Session) []SessionView {
	out := make([]SessionView, len(list))
	for i, s := range list {
		out[i] = SessionView{ID: s.ID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, ExpiresAt: s.ExpiresAt, IPAddress: s.IPAddress, UserAgent: s.UserAgent}
	}
	return out
}

// RevokeInput names the sessions to end: one when SessionID is set, else all.
type RevokeInput struct {
	Reason    string    `json:"reason"`
	SessionID uuid.UUID `json:"sessionId"`
}

// Revoked is the result of RevokeSessions.
type Revoked struct {
	UserID  uuid.UUID `json:"userId"`
	Email   string    `json:"email"`
	Revoked int       `json:"revoked"`
}

// RevokeSessions ends sessions of the player named by an id or an email
// through auth, which records the action and closes the player's streams.
func (s *Service) RevokeSessions(ctx context.Context, actor, userRef string, in RevokeInput) (*Revoked, error) {
	u, n, err := s.d.Auth.SupportRevokeSessions(ctx, actor, account.RealmPlayer, userRef, in.SessionID, strings.TrimSpace(in.Reason))
	if err != nil {
		return nil, err
	}
	return &Revoked{UserID: u.ID, Email: u.Email, Revoked: n}, nil
}

type userCursor struct {
	Field string `json:"f"`
	After string `json:"a"`
}

var errBadCursor = platform.Invalid("cursor", "is not a cursor this list gave out")

func encodeCursor(v any) string {
	b, _ := json.Marshal(v) // plain structs of strings and numbers
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, v any) error {
	if len(s) > 512 {
		return errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return errBadCursor
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errBadCursor
	}
	return nil
}

// checkText refuses a filter no stored value can match and a database
// may choke on: over 254 bytes, not UTF-8, or with control characters.
func checkText(field, s string) error {
	if len(s) > 254 {
		return platform.Invalid(field, "must be at most 254 characters")
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return platform.Invalid(field, "must be text without control characters")
	}
	return nil
}

func pageSize(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPageSize, nil
	case n < 1 || n > MaxPageSize:
		return 0, platform.Invalid("limit", "must be 1-100")
	}
	return n, nil
}
