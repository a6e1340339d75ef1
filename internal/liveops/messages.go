package liveops

import (
	"fmt"
	"time"
)

// Message is an inbox message for the players in its audience, from
// StartAt until EndAt (open-ended when EndAt is absent).
type Message struct {
	ID       string     `json:"id"`
	Title    string     `json:"title"`
	Body     string     `json:"body"`
	StartAt  time.Time  `json:"startAt"`
	EndAt    *time.Time `json:"endAt,omitempty"`
	Audience Audience   `json:"audience"`
}

// MessageView is a message as a player receives it.
type MessageView struct {
	ID     string    `json:"id"`
	Title  string    `json:"title"`
	Body   string    `json:"body"`
	SentAt time.Time `json:"sentAt"`
}

func (c *Config) checkMessages(ps *problems) {
	seen := map[string]bool{}
	for i, m := range c.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		checkKey(ps, p+".id", m.ID, seen)
		checkText(ps, p+".title", m.Title, true, 80)
		checkText(ps, p+".body", m.Body, true, 2000)
		if m.StartAt.IsZero() {
			ps.Add(p+".startAt", "is missing")
		}
		if m.EndAt != nil && !m.EndAt.After(m.StartAt) {
			ps.Add(p, "endAt must be after startAt")
		}
		checkAudience(ps, p+".audience", m.Audience)
	}
}

// activeMessages returns the messages s receives at now, oldest first.
func (c *Config) activeMessages(s Subject, now time.Time) []MessageView {
	out := []MessageView{}
	for _, m := range c.Messages {
		if m.Status(now) != StatusActive || !m.Audience.Matches(s, m.ID, now) {
			continue
		}
		out = append(out, MessageView{ID: m.ID, Title: m.Title, Body: m.Body, SentAt: m.StartAt.UTC()})
	}
	return out
}
