// Package events pushes lobby, social and session changes to players'
// live streams. Services report committed changes as small notices; a
// transport carries them to every serve process (PostgreSQL LISTEN/NOTIFY,
// or an in-process channel on the embedded SQLite database); the Hub of
// each process renders them for the players it has streams for.
package events

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// Notice kinds.
const (
	KindLobby   = "lobby"
	KindSocial  = "social"
	KindSession = "session"
)

// maxNoticeBytes keeps a notice well inside PostgreSQL's 8000-byte NOTIFY
// payload limit.
const maxNoticeBytes = 7900

// Notice is what travels between processes: ids and a change name, never
// rendered payloads. Each process re-reads committed state for its own
// recipients, because what a player may see (their allowed actions, the
// join code, blocks) differs per recipient, and because a rendered lobby
// would not always fit in a NOTIFY.
type Notice struct {
	Kind string `json:"k"`
	// Subject is the lobby (lobby), the acting player (social) or the user
	// whose sessions ended (session).
	Subject uuid.UUID `json:"s"`
	// Other is the target of a social action.
	Other  uuid.UUID `json:"o,omitzero"`
	Change string    `json:"c"`
	// Removed are the players a lobby change took out of the lobby;
	// Audience every player who may hear of it.
	Removed  []uuid.UUID `json:"r,omitempty"`
	Audience []uuid.UUID `json:"a,omitempty"`
	// TargetSees tells whether the target of a social action may hear of it.
	TargetSees bool `json:"t,omitempty"`
	// Origin is the process that published the notice and delivered it to
	// its own streams already; unset when it did not.
	Origin uuid.UUID `json:"p,omitzero"`
	// At is when the notice was published (Unix microseconds), from which
	// the delivery lag is measured.
	At int64 `json:"at,omitempty"`
}

// Encode returns the notice's wire form, or an error when it would not fit
// in a NOTIFY (a lobby's audience is bounded by its capacity, so this only
// guards against a future change that forgets it).
func (n Notice) Encode() ([]byte, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	if len(b) > maxNoticeBytes {
		return nil, fmt.Errorf("events: %s notice of %d bytes exceeds %d", n.Kind, len(b), maxNoticeBytes)
	}
	return b, nil
}

// DecodeNotice reads a notice from its wire form.
func DecodeNotice(b []byte) (Notice, error) {
	var n Notice
	err := json.Unmarshal(b, &n)
	return n, err
}
