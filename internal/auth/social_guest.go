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
	if err := s.auth.allow(ctx, actionGuest, account.RealmPlayer, client, "", s.guests.PerIP, s.guests.PerIP); err != nil {
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
