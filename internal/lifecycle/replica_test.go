package lifecycle_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/store"
)

const streamWait = 10 * time.Second

// endedWithin waits for s to carry session.ended and close, and returns
// how long after start it did.
func endedWithin(t *testing.T, s *apitest.Stream, start time.Time) time.Duration {
	t.Helper()
	s.NextOf(t, events.TypeSessionEnded, streamWait)
	took := time.Since(start)
	s.Ended(t, streamWait)
	return took
}

// A suspension made through one replica takes effect on another at once:
// the next request there is refused, its open stream closes, and sign-in
// there says ACCOUNT_SUSPENDED with details.until.
func TestSuspensionOnAnotherReplica(t *testing.T) {
	srv := apitest.NewWithContent(t)
	if srv.App.DB.Dialect() != store.Postgres {
		t.Skip("replicas share a database only on PostgreSQL; set PLATFORM_TEST_DATABASE_URL")
	}
	replica := apitest.New(t, apitest.WithEnv("PLATFORM_DATABASE_URL", srv.Config.DatabaseURL))
	<-replica.App.Events.Ready()
	a := srv.SignUpPlayer(t)
	there := replica.Client(t)
	there.AddSession(&auth.Principal{Realm: account.RealmPlayer, Token: a.Token})
	s, res := there.OpenEvents("")
	if s == nil {
		t.Fatalf("open events: %d %s", res.Status, res.Body)
	}
	s.NextOf(t, events.TypeSnapshot, streamWait)

	until := time.Now().Add(time.Hour)
	if _, err := srv.App.Lifecycle.Suspend(t.Context(), "support", account.RealmPlayer, a.User.Email, "abuse", until); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	took := endedWithin(t, s, committed)
	t.Logf("the replica's stream ended %s after the suspension committed", took)
	if took > replicaBound {
		t.Errorf("the replica's stream ended %s after the suspension committed, want within %s", took, replicaBound)
	}
	if res := there.Do("GET", "/api/player/bootstrap", nil); res.Status != http.StatusUnauthorized {
		t.Errorf("request on the replica after the suspension: %d %s", res.Status, res.Body)
	}

	res = replica.Client(t).Do("POST", "/api/auth/player/sign-in/email", map[string]string{"email": a.User.Email, "password": a.Password})
	if res.Status != http.StatusForbidden || res.Code() != "ACCOUNT_SUSPENDED" {
		t.Fatalf("sign-in on the replica: %d %s", res.Status, res.Body)
	}
	var body struct{ Details map[string]string }
	res.Decode(t, &body)
	if got, err := time.Parse(time.RFC3339, body.Details["until"]); err != nil || got.Sub(until).Abs() > time.Second {
		t.Errorf("details.until = %q, want %s", body.Details["until"], until.UTC().Format(time.RFC3339))
	}
}

// On one server: a suspended player's open stream closes; the members of
// a deleted host's lobby hear through their streams that the host left
// and who hosts now.
func TestStreamsHearTheEnd(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t)
	ctx := t.Context()
	a, host, member := srv.SignUpPlayer(t), srv.SignUpPlayer(t), srv.SignUpPlayer(t)
	sa, _ := a.Client.OpenEvents("")
	sa.NextOf(t, events.TypeSnapshot, streamWait)
	if _, err := srv.App.Lifecycle.Suspend(ctx, "support", account.RealmPlayer, a.User.ID.String(), "abuse", time.Time{}); err != nil {
		t.Fatal(err)
	}
	endedWithin(t, sa, time.Now())

	res, err := srv.App.Players.CreateLobby(ctx, host.User.ID, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.App.Players.JoinLobby(ctx, member.User.ID, player.JoinLobbyInput{LobbyID: &res.Lobby.ID}); err != nil {
		t.Fatal(err)
	}
	sm, _ := member.Client.OpenEvents("")
	sm.NextOf(t, events.TypeSnapshot, streamWait)
	sh, _ := host.Client.OpenEvents("")
	sh.NextOf(t, events.TypeSnapshot, streamWait)
	if _, err := srv.App.Lifecycle.DeleteBySupport(ctx, "support", account.RealmPlayer, host.User.ID.String(), "asked"); err != nil {
		t.Fatal(err)
	}
	endedWithin(t, sh, time.Now())
	sm.Until(t, streamWait, "the lobby handed to the member, alone", func(ev apitest.Event) bool {
		if ev.Type != events.TypeLobbyUpdated {
			return false
		}
		var u player.LobbyUpdate
		ev.Decode(t, &u)
		return u.Lobby != nil && u.Lobby.Host.ID == member.User.ID && u.Lobby.MemberCount == 1
	})
}
