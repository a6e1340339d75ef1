package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
)

// actionGuest counts guest creations per client address.
const actionGuest = "sign-in-anonymous"

// guestEmailDomain is better-auth's placeholder domain: .invalid never
// resolves, so no mail ever leaves for a guest.
const guestEmailDomain = "anonymous.placeholder.invalid"

// SignInAnonymous creates a guest (better-auth's anonymous plugin) and
// opens its session through OpenSession. A caller who already is a guest
// is refused; the number of guests one address may create is limited.
func (s *Social) SignInAnonymous(ctx context.Context, current *Principal, client Client) (*Principal, error) {
	if current != nil && current.User.IsAnonymous {
		return nil, platform.Errorf(platform.KindInvalid, CodeAnonymousCannotSignInTwo, "Anonymous users cannot sign in again anonymously")
	}
	if _, err := s.auth.allow(ctx, actionGuest, account.RealmPlayer, client, "", s.opts.GuestsPerIP, s.opts.GuestsPerIP); err != nil {
		return nil, err
	}
	var u *account.User
	for range 3 { // a generated nickname that is taken is drawn again
		u = s.newGuest()
		err := s.store.InSocialTx(ctx, func(ctx context.Context, tx SocialTx) error { return tx.InsertUser(ctx, u) })
		if err == nil {
			break
		}
		if !errors.Is(err, account.ErrNicknameTaken) {
			return nil, fmt.Errorf("sign in anonymously: %w", err)
		}
		u = nil
	}
	if u == nil {
		return nil, fmt.Errorf("sign in anonymously: no free nickname")
	}
	return s.auth.OpenSession(ctx, u, true, client)
}

func (s *Social) newGuest() *account.User {
	now := s.auth.clock()
	id := uuid.New()
	return &account.User{
		ID: id, Realm: account.RealmPlayer, Email: id.String() + "@" + guestEmailDomain, Name: "Anonymous",
		Nickname: generatedNickname("guest"), IsAnonymous: true, CreatedAt: now, UpdatedAt: now,
	}
}

// SignUpGuest upgrades the caller's guest to a full account with an email
// and password, in place: the same user id, so its player state stays.
// It follows sign-up's rules and limits, and opens the new session through
// OpenSession.
func (s *Social) SignUpGuest(ctx context.Context, guest *Principal, in account.NewUser, remember bool, client Client) (*Principal, error) {
	realm := account.RealmPlayer
	if err := account.CheckNewUser(realm, in); err != nil {
		return nil, err
	}
	lim := s.auth.opts.Limits
	counted, err := s.auth.allow(ctx, actionSignUp, realm, client, in.Email, lim.LoginIP, lim.LoginAccount)
	if err != nil {
		return nil, err
	}
	prepared, err := s.auth.accounts.Prepare(hashingFor(ctx, realm, client, in.Email), realm, in)
	if err != nil {
		return nil, s.auth.refundUnhashed(ctx, err, counted)
	}
	var u *account.User
	err = s.store.InSocialTx(ctx, func(ctx context.Context, tx SocialTx) error {
		var err error
		if u, err = tx.UserByID(ctx, guest.User.ID); err != nil {
			return err
		}
		if !u.IsAnonymous {
			return errNotAGuest
		}
		u.Email, u.Name, u.Nickname, u.Image = prepared.Email, prepared.Name, prepared.Nickname, prepared.Image
		u.PasswordHash, u.EmailVerified, u.IsAnonymous = prepared.PasswordHash, false, false
		u.UpdatedAt = s.auth.clock()
		return tx.UpdateUser(ctx, u)
	})
	if errors.Is(err, errNotAGuest) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		var pe *platform.Error
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, fmt.Errorf("sign up guest: %w", err)
	}
	return s.auth.OpenSession(ctx, u, remember, client)
}

var errNotAGuest = errors.New("not a guest")
