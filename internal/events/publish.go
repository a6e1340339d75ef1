package events

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/player"
)

// Publisher turns the services' reports of committed changes into notices
// on a transport. It implements player.Events, auth.SessionWatcher and
// profile.SessionWatcher. A notice that cannot be published is logged:
// the change itself has committed, and clients catch up on their next
// snapshot.
type Publisher struct {
	transport Transport
	log       *slog.Logger
	hub       atomic.Pointer[Hub]
}

// NewPublisher returns a publisher on transport.
func NewPublisher(t Transport, log *slog.Logger) *Publisher {
	return &Publisher{transport: t, log: log}
}

func (p *Publisher) publish(ctx context.Context, n Notice) {
	// The acting request may be cancelled the moment it has answered; the
	// notice is about a committed change and goes out regardless, within
	// its own bound.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	n.At = time.Now().UnixMicro()
	if err := p.transport.Publish(ctx, n); err != nil {
		p.log.Warn("publish event notice", "kind", n.Kind, "error", err)
	}
}

// publishTimeout bounds one publish when the database is slow to answer.
const publishTimeout = 5 * time.Second

// DeliverTo has the publisher hand this process's lobby changes to hub
// directly, besides publishing them to the other processes.
func (p *Publisher) DeliverTo(hub *Hub) { p.hub.Store(hub) }

// LobbyChanged implements player.Events. The change goes to this
// process's hub at once, with the state its transaction left, and to the
// other processes as a notice, marked as this process's so that its own
// listener drops it when it comes back. When the hub is behind, the
// notice comes back unmarked and is rendered like another process's.
func (p *Publisher) LobbyChanged(ctx context.Context, c player.LobbyChange) {
	n := Notice{Kind: KindLobby, Subject: c.LobbyID, Change: c.Change, Removed: c.Removed, Audience: c.Audience}
	if hub := p.hub.Load(); hub != nil && hub.offer(c) {
		n.Origin = hub.origin
	}
	p.publish(ctx, n)
}

// SocialChanged implements player.Events.
func (p *Publisher) SocialChanged(ctx context.Context, c player.SocialChange) {
	p.publish(ctx, Notice{Kind: KindSocial, Subject: c.Actor, Other: c.Target, Change: c.Action, TargetSees: c.TargetSees})
}

// SessionsEnded implements auth.SessionWatcher.
func (p *Publisher) SessionsEnded(ctx context.Context, userID uuid.UUID, reason string) {
	p.publish(ctx, Notice{Kind: KindSession, Subject: userID, Change: reason})
}
