package liveops

import "time"

// StatusEnded is the status of an event, banner or message whose window
// has closed. Operators see ended items; players never do.
const StatusEnded = "ended"

// StatusAt says where now lies in the window [start, end): upcoming
// before start, active from start (inclusive) until end (exclusive), ended
// from end on. A zero start or end leaves that side of the window open.
// It is the one place that decides the status of events, banners and
// messages, for players and operators alike.
func StatusAt(start, end, now time.Time) string {
	switch {
	case !start.IsZero() && now.Before(start):
		return StatusUpcoming
	case end.IsZero() || now.Before(end):
		return StatusActive
	}
	return StatusEnded
}

// Status is the event's status at now.
func (e *Event) Status(now time.Time) string { return StatusAt(e.StartAt, e.EndAt, now) }

// Status is the banner's status at now; a banner without a start or an end
// is open on that side.
func (b *Banner) Status(now time.Time) string {
	return StatusAt(orZero(b.StartAt), orZero(b.EndAt), now)
}

// Status is the message's status at now.
func (m *Message) Status(now time.Time) string { return StatusAt(m.StartAt, orZero(m.EndAt), now) }

func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
