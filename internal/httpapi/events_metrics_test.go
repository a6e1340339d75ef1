package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/events"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/store"
	"github.com/towerdefence/platformctl/internal/storetest"
	"github.com/towerdefence/platformctl/internal/testwait"
)

// metricsWatch reads a server's metrics over HTTP and compares them with
// what they were when the watch began.
type metricsWatch struct {
	t      *testing.T
	srv    *apitest.Server
	before map[string]float64
}

func watchMetrics(t *testing.T, srv *apitest.Server) *metricsWatch {
	return &metricsWatch{t: t, srv: srv, before: srv.Scrape(t)}
}

// moved waits until each series has moved by its delta since the watch
// began (the server counts a write after the client may have read it),
// and fails if it does not get there in time, or if a counter moves past
// it: counters only go up, by what happened.
func (w *metricsWatch) moved(deltas map[string]float64) {
	w.t.Helper()
	testwait.Nil(w.t, eventWait, func() error {
		now := w.srv.Scrape(w.t)
		for series, delta := range deltas {
			got, ok := now[series]
			if !ok {
				w.t.Fatalf("%s is not in the metrics", series)
			}
			moved := got - w.before[series]
			counter := strings.HasSuffix(series, "_total") || strings.Contains(series, "_total{") || strings.HasSuffix(series, "_count")
			if counter && moved > delta {
				w.t.Fatalf("%s moved by %v, want %v", series, moved, delta)
			}
			if moved != delta {
				return fmt.Errorf("%s moved by %v, want %v", series, moved, delta)
			}
		}
		return nil
	})
}

func closedBy(reason string) string {
	return fmt.Sprintf("platform_events_streams_closed_total{reason=%q}", reason)
}
func delivered(typ string) string {
	return fmt.Sprintf("platform_events_delivered_total{type=%q}", typ)
}

// TestEventMetricsMove follows streams through each way of ending and
// reads the stream metrics over HTTP after each step: the counters move by
// what happened and only up, and the gauge follows the open streams.
func TestEventMetricsMove(t *testing.T) {
	srv := newPlayerServer(t, apitest.WithEnv("PLATFORM_EVENTS_PER_SESSION", "2"),
		apitest.WithEnv("PLATFORM_EVENTS_MAX_STREAMS", "3"), apitest.WithEnv("PLATFORM_EVENTS_HEARTBEAT", "50ms"))
	<-srv.App.Events.Ready()
	a, b := newPlayer(t, srv), newPlayer(t, srv)
	w := watchMetrics(t, srv)
	if open := w.before["platform_events_streams_open"]; open != 0 {
		t.Fatalf("%v streams open before any was", open)
	}

	first := openEvents(t, a.Client)
	snapshotOf(t, first)
	second := openEvents(t, a.Client)
	snapshotOf(t, second)
	third := openEvents(t, a.Client) // past the session's two: the first goes
	snapshotOf(t, third)
	first.NextOf(t, events.TypeStreamClosed, eventWait)
	first.Ended(t, eventWait)
	w.moved(map[string]float64{"platform_events_streams_opened_total": 3, closedBy(events.ClosedReplaced): 1,
		delivered(events.TypeSnapshot): 3, delivered(events.TypeStreamClosed): 1, "platform_events_streams_open": 2})

	other := openEvents(t, b.Client)
	snapshotOf(t, other)
	_, res := b.Client.OpenEvents("") // past the process's three
	expect(t, res, http.StatusServiceUnavailable, events.CodeTooManyStreams)
	w.moved(map[string]float64{"platform_events_streams_opened_total": 4, "platform_events_streams_refused_total": 1,
		"platform_events_streams_open": 3})

	createLobby(t, a.Client, "custom-hosted", player.VisibilityPublic)
	lobbyUpdate(t, second)
	lobbyUpdate(t, third)
	w.moved(map[string]float64{delivered(events.TypeLobbyUpdated): 2, "platform_events_delivery_lag_seconds_count": 2})

	second.Close() // the next heartbeat finds the client gone
	w.moved(map[string]float64{closedBy(events.EndedClientGone): 1, "platform_events_streams_open": 2})

	expect(t, call(t, a.Client, "POST", "/api/auth/player/revoke-sessions", map[string]any{}), http.StatusOK, "")
	third.NextOf(t, events.TypeSessionEnded, eventWait)
	third.Ended(t, eventWait)
	w.moved(map[string]float64{closedBy(events.EndedSession): 1, delivered(events.TypeSessionEnded): 1,
		"platform_events_streams_open": 1})

	if srv.App.DB.Dialect() == store.Postgres {
		// A lost listening connection is counted, and its gap mended with
		// a fresh snapshot.
		if n := storetest.TerminateListeners(t, srv.App.DB); n != 1 {
			t.Fatalf("ended %d listening connections, want 1", n)
		}
		snapshotOf(t, other)
		w.moved(map[string]float64{"platform_events_listener_reconnects_total": 1, delivered(events.TypeSnapshot): 5})
	}

	srv.App.Events.Shutdown()
	other.NextOf(t, events.TypeStreamClosed, eventWait)
	other.Ended(t, eventWait)
	w.moved(map[string]float64{closedBy(events.ClosedShutdown): 1, "platform_events_streams_open": 0,
		"platform_events_streams_opened_total": 4, delivered(events.TypeStreamClosed): 2})
}
