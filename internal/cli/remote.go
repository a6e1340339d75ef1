package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/liveops"
	"github.com/towerdefence/platformctl/internal/mail"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/role"
)

// savedSession is what `platformctl login` keeps in the user's
// configuration directory: the server and the administrator session's
// cookies, as the server set them. The file is readable by its owner only.
type savedSession struct {
	Server  string            `json:"server"`
	Email   string            `json:"email"`
	Cookies map[string]string `json:"cookies"`
}

// sessionPath is where the saved session lives: platformctl/session.json
// in the user's configuration directory ($XDG_CONFIG_HOME, else
// os.UserConfigDir).
func sessionPath(e *env) (string, error) {
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", fmt.Errorf("find your configuration directory: %w", err)
		}
	}
	return filepath.Join(dir, "platformctl", "session.json"), nil
}

// loadSession returns the saved session, or nil when there is none.
func loadSession(e *env) (*savedSession, error) {
	path, err := sessionPath(e)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the saved session: %w", err)
	}
	var s savedSession
	if err := json.Unmarshal(raw, &s); err != nil || s.Server == "" {
		return nil, fmt.Errorf("the saved session %s is damaged; run platformctl logout", path)
	}
	return &s, nil
}

func saveSession(e *env, s *savedSession) (string, error) {
	path, err := sessionPath(e)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("save the session: %w", err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return "", fmt.Errorf("save the session: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // WriteFile keeps an older file's mode
		return "", fmt.Errorf("save the session: %w", err)
	}
	return path, os.Rename(tmp, path)
}

// remote is the administrator plane over HTTP, as the signed-in
// administrator of a saved session.
type remote struct {
	s    *savedSession
	http *http.Client
}

func newRemote(s *savedSession) *remote {
	return &remote{s: s, http: &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends one request and decodes a 2xx answer into out; any other
// answer becomes the platform error the server named, so that exit codes
// are those of the direct path.
func (c *remote) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.s.Server, "/")+path, rd)
	if err != nil {
		return platform.Invalid("server", "is not a URL: "+err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// The server's own origin: state-changing requests with a cookie must
	// name a trusted one (PLATFORM_BASE_URL is).
	req.Header.Set("Origin", originOf(c.s.Server))
	for name, value := range c.s.Cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	res, err := c.http.Do(req)
	if err != nil {
		return (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
			Message: "cannot reach " + c.s.Server}).Wrap(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
			Message: "the answer of " + c.s.Server + " was cut short"}).Wrap(err)
	}
	if res.StatusCode/100 != 2 {
		return remoteError(res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: unexpected answer: %w", method, path, err)
	}
	return nil
}

func originOf(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// remoteError turns an answer in the error model back into the error
// the service returned.
func remoteError(status int, body []byte) error {
	var e struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	if json.Unmarshal(body, &e) != nil || e.Code == "" {
		e.Code, e.Message = platform.CodeInternal, fmt.Sprintf("the server answered %d", status)
	}
	if status == http.StatusUnauthorized {
		e.Message += "; sign in again with platformctl login"
	}
	kinds := map[int]platform.Kind{400: platform.KindInvalid, 401: platform.KindUnauthenticated, 403: platform.KindForbidden,
		404: platform.KindNotFound, 409: platform.KindConflict, 413: platform.KindInvalid, 415: platform.KindInvalid,
		422: platform.KindUnprocessable, 429: platform.KindRateLimited, 503: platform.KindUnavailable}
	kind, ok := kinds[status]
	if !ok {
		kind = platform.KindUnavailable
	}
	return &platform.Error{Kind: kind, Code: e.Code, Message: e.Message, Fields: fieldsOf(e.Details), Details: e.Details}
}

// fieldsOf takes details.fields, the problem of each invalid request
// field, back out of an error's details, where the service had it as
// Fields, so that the command names its own flags as on the database.
func fieldsOf(details map[string]any) platform.FieldErrors {
	raw, ok := details["fields"].(map[string]any)
	if !ok {
		return nil
	}
	delete(details, "fields")
	out := platform.FieldErrors{}
	for field, problem := range raw {
		if s, ok := problem.(string); ok {
			out[field] = s
		}
	}
	return out
}

func (c *remote) Me(ctx context.Context) (*admin.CallerView, error) {
	var out admin.CallerView
	return &out, c.do(ctx, "GET", "/api/admin/me", nil, &out)
}

func (c *remote) SearchUsers(ctx context.Context, q admin.UserQuery) (*admin.UserPage, error) {
	v := url.Values{"query": {q.Query}}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	if q.Limit != 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var out admin.UserPage
	return &out, c.do(ctx, "GET", "/api/admin/users?"+v.Encode(), nil, &out)
}

// userID resolves a player named by id or email to the id the routes take.
func (c *remote) userID(ctx context.Context, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil
	}
	page, err := c.SearchUsers(ctx, admin.UserQuery{Query: "email:" + ref, Limit: 2})
	if err != nil {
		return uuid.Nil, err
	}
	for _, u := range page.Users {
		if strings.EqualFold(u.Email, ref) {
			return u.ID, nil
		}
	}
	return uuid.Nil, account.ErrNotFound
}

func (c *remote) User(ctx context.Context, ref string) (*admin.UserDetail, error) {
	id, err := c.userID(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out admin.UserDetail
	return &out, c.do(ctx, "GET", "/api/admin/users/"+id.String(), nil, &out)
}

func (c *remote) AccountStatus(ctx context.Context, realm account.Realm, ref string) (*lifecycle.AccountStatus, error) {
	id, err := c.playerID(ctx, realm, ref)
	if err != nil {
		return nil, err
	}
	var out lifecycle.AccountStatus
	return &out, c.do(ctx, "GET", "/api/admin/users/"+id.String()+"/status", nil, &out)
}

// InspectToken sends the token in the body, never in the URL.
func (c *remote) InspectToken(ctx context.Context, token string) (*profile.TokenInfo, error) {
	var out profile.TokenInfo
	return &out, c.do(ctx, "POST", "/api/admin/tokens/inspect", map[string]string{"token": token}, &out)
}

func (c *remote) RevokeSessions(ctx context.Context, ref string, in admin.RevokeInput) (*admin.Revoked, error) {
	id, err := c.userID(ctx, ref)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"reason": in.Reason}
	if in.SessionID != uuid.Nil {
		body["sessionId"] = in.SessionID
	}
	var out admin.Revoked
	return &out, c.do(ctx, "POST", "/api/admin/users/"+id.String()+"/sessions/revoke", body, &out)
}

func (c *remote) Audit(ctx context.Context, q admin.AuditQuery) (*admin.AuditPage, error) {
	v := url.Values{}
	for k, s := range map[string]string{"user": q.User, "action": q.Action, "actor": q.Actor, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if q.Limit != 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var out admin.AuditPage
	return &out, c.do(ctx, "GET", "/api/admin/audit?"+v.Encode(), nil, &out)
}

func (c *remote) Mail(ctx context.Context, f mail.Filter) ([]mail.Message, error) {
	v := url.Values{}
	if f.Status != "" {
		v.Set("status", string(f.Status))
	}
	if f.Limit != 0 {
		v.Set("limit", fmt.Sprint(f.Limit))
	}
	var out []mail.Message
	return out, c.do(ctx, "GET", "/api/admin/mail?"+v.Encode(), nil, &out)
}

func (c *remote) MailShow(ctx context.Context, id uuid.UUID) (*admin.MailDetail, error) {
	out := admin.MailDetail{Message: &mail.Message{}}
	return &out, c.do(ctx, "GET", "/api/admin/mail/"+id.String(), nil, &out)
}

func (c *remote) MailRetry(ctx context.Context, reason string, id uuid.UUID) (*mail.Message, error) {
	var out mail.Message
	return &out, c.do(ctx, "POST", "/api/admin/mail/"+id.String()+"/retry", map[string]string{"reason": reason}, &out)
}

func (c *remote) LiveOps(ctx context.Context) (*liveops.Snapshot, error) {
	var out liveops.Snapshot
	return &out, c.do(ctx, "GET", "/api/admin/liveops", nil, &out)
}

func (c *remote) SetSeed(ctx context.Context, in admin.SeedInput) (*liveops.SeedChange, error) {
	var out liveops.SeedChange
	return &out, c.do(ctx, "POST", "/api/admin/liveops/seeds", in, &out)
}

func (c *remote) SetRole(ctx context.Context, ref role.AdminRef, in admin.RoleInput) (*role.Change, error) {
	if ref.ID == uuid.Nil {
		var list []role.AdminAccount
		if err := c.do(ctx, "GET", "/api/admin/admins", nil, &list); err != nil {
			return nil, err
		}
		for _, a := range list {
			if strings.EqualFold(a.Email, ref.Email) {
				ref.ID = a.ID
			}
		}
		if ref.ID == uuid.Nil {
			return nil, role.ErrAdminNotFound
		}
	}
	var out role.Change
	return &out, c.do(ctx, "POST", "/api/admin/admins/"+ref.ID.String()+"/role", in, &out)
}

func (c *remote) IssueToken(ctx context.Context, ref string, in admin.IssueRequest) (*profile.Issued, error) {
	id, err := c.userID(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out profile.Issued
	return &out, c.do(ctx, "POST", "/api/admin/users/"+id.String()+"/tokens", in, &out)
}

// playerID resolves ref to a player's id for a route of the plane, which
// serves players only: an administrator's account is changed on the
// database (break-glass).
func (c *remote) playerID(ctx context.Context, realm account.Realm, ref string) (uuid.UUID, error) {
	if realm == account.RealmAdmin {
		return uuid.Nil, errAdminRealmRemote
	}
	return c.userID(ctx, ref)
}

func (c *remote) Suspend(ctx context.Context, realm account.Realm, ref, reason string, until time.Time) (*auth.Suspension, error) {
	id, err := c.playerID(ctx, realm, ref)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"reason": reason}
	if !until.IsZero() {
		body["until"] = until.UTC()
	}
	var out auth.Suspension
	return &out, c.do(ctx, "POST", "/api/admin/users/"+id.String()+"/suspend", body, &out)
}

func (c *remote) Unsuspend(ctx context.Context, realm account.Realm, ref, reason string) (bool, error) {
	id, err := c.playerID(ctx, realm, ref)
	if err != nil {
		return false, err
	}
	var out struct {
		Lifted bool `json:"lifted"`
	}
	err = c.do(ctx, "POST", "/api/admin/users/"+id.String()+"/unsuspend", map[string]string{"reason": reason}, &out)
	return out.Lifted, err
}

func (c *remote) DeleteUser(ctx context.Context, realm account.Realm, ref, reason string) (*lifecycle.Tombstone, error) {
	id, err := c.playerID(ctx, realm, ref)
	if err != nil {
		return nil, err
	}
	var out lifecycle.Tombstone
	return &out, c.do(ctx, "POST", "/api/admin/users/"+id.String()+"/delete", map[string]string{"reason": reason}, &out)
}

func (c *remote) ExportUser(ctx context.Context, realm account.Realm, ref string) (*lifecycle.Export, error) {
	id, err := c.playerID(ctx, realm, ref)
	if err != nil {
		return nil, err
	}
	var out lifecycle.Export
	return &out, c.do(ctx, "GET", "/api/admin/users/"+id.String()+"/export", nil, &out)
}

func (c *remote) CreateAdmin(ctx context.Context, in admin.NewAdminInput) (*account.User, error) {
	out := account.User{Realm: account.RealmAdmin}
	return &out, c.do(ctx, "POST", "/api/admin/admins", in, &out)
}

func (c *remote) Publish(ctx context.Context, in admin.PublishInput) (*liveops.Head, error) {
	var out liveops.Head
	return &out, c.do(ctx, "POST", "/api/admin/liveops", in, &out)
}

// signIn opens an administrator session on server and returns its
// cookies; secondFactor tells that the account holds one, and the
// session opens only once verifySecondFactor passed.
func signIn(ctx context.Context, server, email, password string) (_ *savedSession, secondFactor bool, _ error) {
	s := &savedSession{Server: strings.TrimRight(server, "/"), Email: email, Cookies: map[string]string{}}
	raw, err := newRemote(s).exchange(ctx, "/sign-in/email", map[string]any{"email": email, "password": password, "rememberMe": true})
	if err != nil {
		return nil, false, err
	}
	var answer struct {
		TwoFactorRedirect bool `json:"twoFactorRedirect"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, false, fmt.Errorf("sign-in: unexpected answer: %w", err)
	}
	if len(s.Cookies) == 0 {
		return nil, false, errors.New("the server signed you in but set no session cookie")
	}
	return s, answer.TwoFactorRedirect, nil
}

// verifySecondFactor completes a sign-in with the authenticator's code
// (six digits) or a backup code; the session's cookies replace the
// challenge's.
func (c *remote) verifySecondFactor(ctx context.Context, code string) error {
	path := "/two-factor/verify-backup-code"
	if len(code) == 6 && strings.Trim(code, "0123456789") == "" {
		path = "/two-factor/verify-totp"
	}
	_, err := c.exchange(ctx, path, map[string]any{"code": code})
	return err
}

// exchange posts body to the admin realm's auth route path with the
// session's cookies and keeps the cookies the answer sets or clears. It
// returns the body of a 200.
func (c *remote) exchange(ctx context.Context, path string, body any) ([]byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.s.Server+auth.MountPath(account.RealmAdmin)+path, bytes.NewReader(payload))
	if err != nil {
		return nil, platform.Invalid("server", "is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", originOf(c.s.Server))
	for name, value := range c.s.Cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable, Message: "cannot reach " + c.s.Server}).Wrap(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
			Message: "the answer of " + c.s.Server + " was cut short"}).Wrap(err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, remoteError(res.StatusCode, raw)
	}
	for _, ck := range res.Cookies() {
		if ck.MaxAge < 0 || ck.Value == "" {
			delete(c.s.Cookies, ck.Name)
		} else {
			c.s.Cookies[ck.Name] = ck.Value
		}
	}
	return raw, nil
}

// signOut ends the saved session on its server.
func (c *remote) signOut(ctx context.Context) error {
	return c.do(ctx, "POST", auth.MountPath(account.RealmAdmin)+"/sign-out", map[string]any{}, nil)
}
