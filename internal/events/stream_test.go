package events

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestStreamNeverGoesBackToAnOlderLobby feeds a stream's writer one
// lobby's states out of order, and states of several lobbies.
func TestStreamNeverGoesBackToAnOlderLobby(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	s := &Stream{metrics: m}
	start := time.Now()
	at := func(lobby uuid.UUID, step int) Event {
		return Event{shows: &shown{lobby: lobby, version: start.Add(time.Duration(step) * time.Microsecond)}}
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
	if n := count(t, m.dropped.WithLabelValues(droppedStale)); n != 1 {
		t.Fatalf("%v stale events counted, want 1", n)
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

// TestLaggingStreamEnds fills a stream's buffer: the next event ends the
// stream as lagging and is counted as dropped.
func TestLaggingStreamEnds(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	h := &Hub{opts: Options{Metrics: m}}
	s := &Stream{events: make(chan Event, 1), done: make(chan struct{}), metrics: m}
	h.send(s, Event{Type: TypeLobbyUpdated})
	h.send(s, Event{Type: TypeLobbyUpdated})
	final := s.Final()
	if final == nil || final.Type != TypeStreamClosed || s.reason != ClosedLagging {
		t.Fatalf("final event %+v, reason %q; want stream.closed for lagging", final, s.reason)
	}
	if n := count(t, m.dropped.WithLabelValues(droppedLagging)); n != 1 {
		t.Fatalf("%v lagging events counted, want 1", n)
	}
}

func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
