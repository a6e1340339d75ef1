package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// latency has each lobby's host toggle ready over HTTP, o.rate actions a
// second across the lobbies, and times each action from its response to
// the lobby.updated event carrying the same lobby version at the guest's
// stream (on -stream-base when set).
func latency(ctx context.Context, log *slog.Logger, o options) error {
	a, err := openApp(ctx, log)
	if err != nil {
		return err
	}
	players, err := makePlayers(ctx, a, 2*o.lobbies)
	if err != nil {
		a.Close()
		return err
	}
	hosts, guests := players[:o.lobbies], players[o.lobbies:]
	lobbies, err := makeLobbies(ctx, a, hosts, guests)
	a.Close()
	if err != nil {
		return err
	}
	var (
		mu        sync.Mutex
		responded = map[string]time.Time{} // lobby id + updatedAt -> response
		delivered = map[string]time.Time{} // the same key -> event at the guest
		wg        sync.WaitGroup
	)
	for _, g := range guests {
		s, err := openStream(ctx, o.streamBase, g.Cookie)
		if err != nil {
			return err
		}
		defer s.Close()
		wg.Go(func() {
			s.read(func(ev sseEvent) { //nolint:errcheck // ends when the stream is closed
				if ev.Type != "lobby.updated" {
					return
				}
				var u struct {
					LobbyID uuid.UUID `json:"lobbyId"`
					Lobby   *struct {
						UpdatedAt time.Time `json:"updatedAt"`
					} `json:"lobby"`
				}
				if json.Unmarshal([]byte(ev.Data), &u) != nil || u.Lobby == nil {
					return
				}
				mu.Lock()
				delivered[key(u.LobbyID, u.Lobby.UpdatedAt)] = ev.At
				mu.Unlock()
			}, func(time.Time) {})
		})
	}
	time.Sleep(500 * time.Millisecond) // let every snapshot pass

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
	defer tick.Stop()
	end := time.Now().Add(o.dur)
	busy := make([]sync.Mutex, len(lobbies)) // one action at a time per lobby
	ready := make([]bool, len(lobbies))
	var actions sync.WaitGroup
	sent, skipped := 0, 0
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		n := i % len(lobbies)
		if !busy[n].TryLock() {
			skipped++
			continue
		}
		sent++
		actions.Go(func() {
			defer busy[n].Unlock()
			ready[n] = !ready[n]
			at, updated, err := readyAction(ctx, client, o.base, hosts[n].Cookie, lobbies[n], ready[n])
			if err != nil {
				fmt.Fprintln(os.Stderr, "eventload: action:", err)
				return
			}
			mu.Lock()
			responded[key(lobbies[n], updated)] = at
			mu.Unlock()
		})
	}
	actions.Wait()
	time.Sleep(2 * time.Second) // the last events' grace
	mu.Lock()
	defer mu.Unlock()
	var lat latencies
	missing, early := 0, 0
	for k, at := range responded {
		got, ok := delivered[k]
		switch {
		case !ok:
			missing++
		case got.Before(at):
			early++
			lat = append(lat, 0)
		default:
			lat = append(lat, got.Sub(at))
		}
	}
	slices.Sort(lat)
	fmt.Printf("actions:   %d sent at %.0f/s over %s (%d ticks skipped: lobby busy), streams on %s\n", sent, o.rate, o.dur, skipped, o.streamBase)
	fmt.Printf("delivery:  %s (%d events before the response counted as 0, %d never delivered)\n", lat, early, missing)
	return nil
}

func key(lobby uuid.UUID, updated time.Time) string {
	return lobby.String() + "@" + updated.UTC().Format(time.RFC3339Nano)
}

// readyAction sets the host's ready flag and returns when the response
// arrived and the lobby version it names.
func readyAction(ctx context.Context, c *http.Client, base, cookie string, lobby uuid.UUID, ready bool) (time.Time, time.Time, error) {
	body, _ := json.Marshal(map[string]bool{"ready": ready}) //nolint:errcheck // a map of bools encodes
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/player/lobbies/"+lobby.String()+"/ready", bytes.NewReader(body))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Origin", base)
	res, err := c.Do(req)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	defer res.Body.Close()
	var out struct {
		Lobby *struct {
			UpdatedAt time.Time `json:"updatedAt"`
		} `json:"lobby"`
	}
	err = json.NewDecoder(res.Body).Decode(&out)
	at := time.Now()
	if err != nil || res.StatusCode != http.StatusOK || out.Lobby == nil {
		return at, time.Time{}, fmt.Errorf("ready: %d %v", res.StatusCode, err)
	}
	return at, out.Lobby.UpdatedAt, nil
}
