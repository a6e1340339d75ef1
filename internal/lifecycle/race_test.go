package lifecycle_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/storetest"
)

// A deletion racing a friend request to the account, a join of the lobby
// it hosts and its own sign-in, each in its own goroutine: whatever
// order the database picks, every request gets a clear answer (never a
// 5xx), no row refers to the account afterwards, no session of it
// survives, and the lobby's member count matches its members.
func TestDeletionRaces(t *testing.T) {
	t.Parallel()
	srv := apitest.NewWithContent(t)
	ctx := t.Context()
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for range rounds {
		doomed, friend, joiner := srv.SignUpPlayer(t), srv.SignUpPlayer(t), srv.SignUpPlayer(t)
		res, err := srv.App.Players.CreateLobby(ctx, doomed.User.ID, player.CreateLobbyInput{Queue: "custom-hosted", Visibility: player.VisibilityPublic})
		if err != nil {
			t.Fatal(err)
		}
		lobbyID := res.Lobby.ID
		signIn := srv.Client(t)
		var wg sync.WaitGroup
		answers := make([]*apitest.Response, 3)
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			if _, err := srv.App.Lifecycle.DeleteBySupport(ctx, "support", account.RealmPlayer, doomed.User.ID.String(), "race"); err != nil {
				t.Errorf("delete: %v", err)
			}
		})
		wg.Go(func() {
			<-start
			answers[0] = friend.Client.Do("POST", "/api/player/social/actions", map[string]string{"action": player.ActionRequest, "target": doomed.User.ID.String()})
		})
		wg.Go(func() {
			<-start
			answers[1] = joiner.Client.Do("POST", "/api/player/lobbies/join", map[string]any{"lobbyId": lobbyID})
		})
		wg.Go(func() {
			<-start
			answers[2] = signIn.Do("POST", "/api/auth/player/sign-in/email", map[string]string{"email": doomed.User.Email, "password": doomed.Password})
		})
		close(start)
		wg.Wait()
		t.Logf("answers: friend request %d, join %d, sign-in %d", answers[0].Status, answers[1].Status, answers[2].Status)
		for i, a := range answers {
			if a.Status >= 500 {
				t.Errorf("racer %d: %d %s", i, a.Status, a.Body)
			}
		}
		if refs := storetest.RowsReferencing(t, srv.App.DB, doomed.User.ID); len(refs) != 0 {
			t.Errorf("rows refer to the deleted account: %v (answers %d %d %d)", refs, answers[0].Status, answers[1].Status, answers[2].Status)
		}
		if answers[2].Status == http.StatusOK {
			if r := signIn.Do("GET", "/api/player/bootstrap", nil); r.Status != http.StatusUnauthorized {
				t.Errorf("the session opened in the race outlived the deletion: %d", r.Status)
			}
		}
		// Deleted first, the host closed the lobby and took it along, and
		// the join found nothing; joined first, the joiner hosts it now.
		l, err := srv.App.Players.Lobby(ctx, joiner.User.ID, lobbyID)
		if platform.ErrorCode(err) == player.CodeLobbyNotFound && answers[1].Status == http.StatusNotFound {
			continue
		}
		if err != nil {
			t.Fatalf("lobby after the race: %v (join answered %d %s)", err, answers[1].Status, answers[1].Body)
		}
		if l.MemberCount != len(l.Members) || (l.Status == player.LobbyOpen && (l.MemberCount != 1 || l.Host.ID != joiner.User.ID)) {
			t.Errorf("lobby after the race: status %s, count %d, members %d, host %v (join answered %d)",
				l.Status, l.MemberCount, len(l.Members), l.Host.ID, answers[1].Status)
		}
	}
}
