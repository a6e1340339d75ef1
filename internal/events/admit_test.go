package events

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestStreamNeverGoesBackToAnOlderLobby feeds a stream's writer one
// lobby's states out of order, and states of several lobbies.
func TestStreamNeverGoesBackToAnOlderLobby(t *testing.T) {
	s := &Stream{}
	start := time.Now()
	at := func(lobby uuid.UUID, step int) Event {
		return Event{lobby: lobby, version: start.Add(time.Duration(step) * time.Microsecond)}
	}
	l := uuid.New()
	steps := []struct {
		ev   Event
		want bool
	}{
		{at(l, 1), true},
		{at(l, 3), true},
		{at(l, 2), false}, // overtaken by 3
		{at(l, 3), true},  // the same state again, for another change of one commit
		{Event{Type: TypeSocialUpdated}, true},
		{at(l, 4), true},
	}
	for i, st := range steps {
		if got := s.Admit(st.ev); got != st.want {
			t.Fatalf("step %d: Admit = %v, want %v", i, got, st.want)
		}
	}
	// Lobbies the player has long left are forgotten, within a bound.
	for range rememberedLobbies {
		if !s.Admit(at(uuid.New(), 1)) {
			t.Fatal("a first state of another lobby was refused")
		}
	}
	if len(s.sent) != rememberedLobbies || !s.Admit(at(l, 2)) {
		t.Fatalf("the stream remembers %d lobbies, want %d, the oldest forgotten", len(s.sent), rememberedLobbies)
	}
}
