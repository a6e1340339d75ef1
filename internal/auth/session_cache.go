package auth

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/sessioncache"
)

// cachedSession is a validated session and its user as the database had
// them. Readers get copies: the cached values never change, so neither
// does what is rendered from them.
type cachedSession struct {
	sess      Session
	user      account.User
	rendering Rendering
}

// Rendering is a memo the HTTP layer keeps beside a cached session: its
// encoding of the session and user, worked out once per cache entry
// instead of once per request. Any change to the session or the user
// replaces the entry, and so the memo; the memo never holds the raw token.
type Rendering struct{ v atomic.Pointer[any] }

// Load returns what Store kept, or nil.
func (r *Rendering) Load() any {
	if p := r.v.Load(); p != nil {
		return *p
	}
	return nil
}

// Store keeps v. Concurrent requests may each render and store; they
// store the same thing.
func (r *Rendering) Store(v any) { r.v.Store(&v) }

// Why users' cached sessions are forgotten besides their ending.
const (
	// ChangedProfile: the user's name, nickname, email or password changed.
	ChangedProfile = "profile_changed"
	// ChangedRole: an administrator's role changed.
	ChangedRole = "role_changed"
	// ChangedEmailVerified: the user verified their email.
	ChangedEmailVerified = "email_verified"
)

// UserSessionsChanged is the one thing to call after anything that ends
// or changes a user's sessions, or the user that sessions show, has
// committed: sign-out, revocation, a password change or reset, a role
// change, deletion, suspension. It forgets the user's sessions in this
// process's cache at once and tells the watcher, which carries the news
// to every other process (whose caches forget them too, and whose event
// streams of the user end when their session is gone). The revoke methods
// of this package call it themselves.
func (s *Service) UserSessionsChanged(ctx context.Context, userID uuid.UUID, reason string) {
	s.ForgetCachedSessions(userID)
	if s.opts.Watcher != nil {
		s.opts.Watcher.SessionsEnded(ctx, userID, reason)
	}
}

// SessionsEnded implements the session watchers of the services that
// change users (profile changes, administrator roles): it is
// UserSessionsChanged.
func (s *Service) SessionsEnded(ctx context.Context, userID uuid.UUID, reason string) {
	s.UserSessionsChanged(ctx, userID, reason)
}

// ForgetCachedSessions forgets the user's sessions in this process's
// cache only: for news of a change made elsewhere.
func (s *Service) ForgetCachedSessions(userID uuid.UUID) {
	if s.cache != nil {
		s.cache.ForgetUser(userID)
	}
}

// PauseSessionCache stops the cache serving, and empties it, while this
// process cannot hear of changes made by others (its event listener is
// disconnected): every request reads its session from the database.
func (s *Service) PauseSessionCache() {
	if s.cache != nil {
		s.cache.Pause()
	}
}

// ResumeSessionCache lets the cache serve again, empty, once this process
// hears of changes again.
func (s *Service) ResumeSessionCache() {
	if s.cache != nil {
		s.cache.Resume()
	}
}

// cachedSession returns copies of the cached session with hash and its
// user, and the entry's rendering. It misses when the session has expired (the database read then
// deletes it) or, for a request that may refresh it, when its refresh is
// due: the read-through sees an extension another process made already,
// so the session is written at most once per RefreshAfter.
func (s *Service) cachedSession(hash TokenHash, now time.Time, refresh bool) (*Session, *account.User, *Rendering, bool) {
	if s.cache == nil {
		return nil, nil, nil, false
	}
	c, ok := s.cache.Get(hash)
	if !ok || !now.Before(c.sess.ExpiresAt) || refresh && s.refreshDue(&c.sess, now) {
		return nil, nil, nil, false
	}
	sess, u := c.sess, c.user
	return &sess, &u, &c.rendering, true
}

// beginRead takes the cache's ticket before a database read.
func (s *Service) beginRead() sessioncache.Ticket {
	if s.cache == nil {
		return 0
	}
	return s.cache.Begin()
}

// keepSession caches copies of sess and u, read after ticket was taken,
// and returns the new entry's rendering (a fresh one without a cache).
func (s *Service) keepSession(ticket sessioncache.Ticket, hash TokenHash, sess *Session, u *account.User) *Rendering {
	if s.cache == nil {
		return &Rendering{}
	}
	c := &cachedSession{sess: *sess, user: *u}
	c.sess.Token = "" // the raw token stays with the request
	s.cache.Put(ticket, hash, u.ID, c)
	return &c.rendering
}
