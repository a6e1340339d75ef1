package player

import "github.com/towerdefence/platformctl/internal/jsonenc"

// The lobby browser is one of the hottest routes, and encoding/json spent
// more CPU on its page of lobbies (reflection, and a MarshalJSON or
// MarshalText call for every time and id) than the rest of the handler.
// These methods write the same bytes as json.Marshal; lobby_json_test.go
// holds them to it, so a field added to these types needs adding here.

// AppendJSON appends the list as json.Marshal would.
func (l *LobbyList) AppendJSON(b []byte) []byte {
	b = append(b, `{"lobbies":`...)
	if l.Lobbies == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range l.Lobbies {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = l.Lobbies[i].appendFields(b)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"current":`...)
	if l.Current == nil {
		b = append(b, "null"...)
	} else {
		b = l.Current.AppendJSON(b)
	}
	return append(b, '}')
}

// AppendJSON appends the lobby as json.Marshal would.
func (l *Lobby) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	b = l.LobbySummary.appendFields(b)
	b = append(b, `,"code":`...)
	b = jsonenc.StringPtr(b, l.Code)
	b = append(b, `,"members":`...)
	if l.Members == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range l.Members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"player":`...)
			b = m.Player.appendJSON(b)
			b = append(b, `,"host":`...)
			b = jsonenc.Bool(b, m.Host)
			b = append(b, `,"ready":`...)
			b = jsonenc.Bool(b, m.Ready)
			b = append(b, `,"joinedAt":`...)
			b = jsonenc.Time(b, m.JoinedAt)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"allowedActions":`...)
	if l.AllowedActions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range l.AllowedActions {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.String(b, a)
		}
		b = append(b, ']')
	}
	b = append(b, `,"updatedAt":`...)
	b = jsonenc.Time(b, l.UpdatedAt)
	return append(b, '}')
}

// appendFields appends the summary's fields without the braces, for
// Lobby, which embeds it.
func (s *LobbySummary) appendFields(b []byte) []byte {
	b = append(b, `"id":`...)
	b = jsonenc.UUID(b, s.ID)
	b = append(b, `,"queue":`...)
	b = jsonenc.String(b, s.Queue)
	b = append(b, `,"visibility":`...)
	b = jsonenc.String(b, s.Visibility)
	b = append(b, `,"status":`...)
	b = jsonenc.String(b, s.Status)
	b = append(b, `,"host":`...)
	b = s.Host.appendJSON(b)
	b = append(b, `,"capacity":`...)
	b = jsonenc.Int(b, s.Capacity)
	b = append(b, `,"memberCount":`...)
	b = jsonenc.Int(b, s.MemberCount)
	b = append(b, `,"createdAt":`...)
	b = jsonenc.Time(b, s.CreatedAt)
	b = append(b, `,"expiresAt":`...)
	return jsonenc.Time(b, s.ExpiresAt)
}

func (p *PlayerRef) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.UUID(b, p.ID)
	b = append(b, `,"nickname":`...)
	b = jsonenc.String(b, p.Nickname)
	b = append(b, `,"name":`...)
	b = jsonenc.String(b, p.Name)
	b = append(b, `,"image":`...)
	b = jsonenc.StringPtr(b, p.Image)
	return append(b, '}')
}
