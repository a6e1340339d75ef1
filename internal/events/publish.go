package events

import (
	"context"
	"log/slog"
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
	if err := p.transport.Publish(ctx, n); err != nil {
		p.log.Warn("publish event notice", "kind", n.Kind, "error", err)
	}
}

// publishTimeout bounds one publish when the database is slow to answer.
const publishTimeout = 5 * time.Second

// LobbyChanged implements player.Events.
func (p *Publisher) LobbyChanged(ctx context.Context, c player.LobbyChange) {
	p.publish(ctx, Notice{Kind: KindLobby, Subject: c.LobbyID, Change: c.Change, Removed: c.Removed, Audience: c.Audience})
}

// SocialChanged implements player.Events.
func (p *Publisher) SocialChanged(ctx context.Context, c player.SocialChange) {
	p.publish(ctx, Notice{Kind: KindSocial, Subject: c.Actor, Other: c.Target, Change: c.Action, TargetSees: c.TargetSees})
}

// SessionsEnded implements auth.SessionWatcher.
func (p *Publisher) SessionsEnded(ctx context.Context, userID uuid.UUID, reason string) {
	p.publish(ctx, Notice{Kind: KindSession, Subject: userID, Change: reason})
}
