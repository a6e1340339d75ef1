package player_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/player"
)

func TestLobbyListAppendJSONMatchesEncodingJSON(t *testing.T) {
	image := "https://cdn.example.com/a.png?x=1&y=<2>"
	code := "ABC234"
	at := time.Date(2026, 11, 21, 22, 48, 23, 123456789, time.UTC)
	host := player.PlayerRef{ID: uuid.New(), Nickname: "host\u2028nick", Name: "Ünïcode \"name\" \xff", Image: &image}
	summary := player.LobbySummary{ID: uuid.New(), Queue: "casual-long", Visibility: player.VisibilityFriends, Status: player.LobbyOpen,
		Host: host, Capacity: 4, MemberCount: 2, CreatedAt: at, ExpiresAt: at.Add(30 * time.Minute)}
	full := &player.LobbyList{
		Lobbies: []player.LobbySummary{summary, summary},
		Current: &player.Lobby{
			LobbySummary: summary, Code: &code,
			Members: []player.LobbyMember{
				{Player: host, Host: true, Ready: true, JoinedAt: at},
			},
			AllowedActions: []string{player.LobbyActionLeave, player.LobbyActionStart}, UpdatedAt: at,
		},
	}
	// Every field of the full list is set, so a field added to these
	// types shows up in json.Marshal's output and fails the comparison
	// until AppendJSON writes it too.
	assertNoZeroFields(t, reflect.ValueOf(full).Elem(), "LobbyList")

	partial := &player.LobbyList{
		Lobbies: []player.LobbySummary{{ID: uuid.New(), Queue: "q", Visibility: "public", Status: "open",
			Host: player.PlayerRef{ID: uuid.New()}, CreatedAt: at.Truncate(time.Second)}},
		Current: &player.Lobby{LobbySummary: summary, Members: []player.LobbyMember{
			{Player: player.PlayerRef{ID: uuid.New(), Nickname: "b", Name: "B"}, JoinedAt: at.Add(time.Second)}}},
	}
	for name, l := range map[string]*player.LobbyList{
		"full":           full,
		"partial":        partial,
		"empty":          {Lobbies: []player.LobbySummary{}},
		"nil slices":     {},
		"bare current":   {Lobbies: []player.LobbySummary{}, Current: &player.Lobby{}},
		"empty current":  {Current: &player.Lobby{Members: []player.LobbyMember{}, AllowedActions: []string{}}},
		"html in a name": {Lobbies: []player.LobbySummary{{Host: player.PlayerRef{Name: "<&>"}}}},
	} {
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("%s:\nAppendJSON   %s\njson.Marshal %s", name, got, want)
		}
	}
}

func assertNoZeroFields(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			t.Errorf("%s is nil", path)
			return
		}
		assertNoZeroFields(t, v.Elem(), path)
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("%s is empty", path)
		}
		for i := range v.Len() {
			assertNoZeroFields(t, v.Index(i), path+"[]")
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if v.IsZero() {
				t.Errorf("%s is zero", path)
			}
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				assertNoZeroFields(t, v.Field(i), path+"."+f.Name)
			}
		}
	default:
		if v.IsZero() {
			t.Errorf("%s is zero", path)
		}
	}
}
