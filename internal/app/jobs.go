package app

import (
	"context"
	"time"

	"github.com/towerdefence/platformctl/internal/jobs"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/profile"
	"github.com/towerdefence/platformctl/internal/store"
)

// jobList is every periodic task of the service. The sweeps delete in
// batches and are idempotent, so a run cut short (a replica killed
// mid-job) is finished by the replica that claims the job after its
// lease lapses.
func (a *App) jobList() []jobs.Job {
	sweeps, j := a.DB.Sweeps().WithBatch(a.Config.Jobs.SweepBatch), a.Config.Jobs
	before := func(age time.Duration) time.Time { return a.Now().Add(-age) }
	// Each sweep's batches are fenced by the run's lease.
	sweep := func(name string, fn func(ctx context.Context, sw *store.Sweeps, dryRun bool) (int, error)) jobs.Job {
		return jobs.Job{Name: name, Every: j.SweepEvery, Run: func(ctx context.Context, p jobs.Pass) (int, error) {
			return fn(ctx, sweeps.Fenced(name, p.Holder), p.DryRun)
		}}
	}
	list := []jobs.Job{
		sweep("expired-sessions", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.ExpiredSessions(ctx, a.Now(), dry)
		}),
		sweep("expired-mail-tokens", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.ExpiredMailTokens(ctx, a.Now(), dry)
		}),
		sweep("expired-oauth-states", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.ExpiredOAuthStates(ctx, a.Now(), dry)
		}),
		sweep("expired-factor-challenges", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.ExpiredFactorChallenges(ctx, a.Now(), dry)
		}),
		sweep("expired-deletion-links", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.ExpiredDeletionTokens(ctx, a.Now(), dry)
		}),
		sweep("freed-identifiers", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.FreedIdentifiers(ctx, a.Now(), dry)
		}),
		sweep("rate-limit-counters", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.RateLimits(ctx, a.Now(), dry)
		}),
		sweep("finished-mail", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.FinishedMail(ctx, before(j.MailRetention), dry)
		}),
		sweep("closed-lobbies", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.ClosedLobbies(ctx, before(player.ClosedLobbyRetention), dry)
		}),
		// A pending change whose link expired loses its new password hash
		// at once; the change itself stays for profile.Retention.
		sweep("stale-password-changes", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.StalePasswordChanges(ctx, before(a.Config.TokenTTL), dry)
		}),
		sweep("old-profile-changes", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.OldProfileChanges(ctx, before(profile.Retention), dry)
		}),
		sweep("inactive-guests", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.InactiveGuests(ctx, before(a.guestRetention()), dry)
		}),
		{Name: "idle-lobbies", Every: j.LobbyEvery, NoDryRun: true, Run: func(ctx context.Context, _ jobs.Pass) (int, error) {
			return a.Players.CloseIdleLobbies(ctx)
		}},
		// The figures of the metrics and the admin bootstraps: one snapshot
		// row, so no scrape or request counts a growing table.
		{Name: "gauges", Every: a.gaugesEvery(), NoDryRun: true, Run: func(ctx context.Context, _ jobs.Pass) (int, error) {
			return 0, a.Gauges.Refresh(ctx)
		}},
		{Name: "overdue-mail", Every: j.MailEvery, NoDryRun: true, Run: func(ctx context.Context, _ jobs.Pass) (int, error) {
			return a.MailWorker.ExpireOverdue(ctx, a.Now().UTC())
		}},
	}
	if j.AuditRetention > 0 {
		list = append(list, sweep("audit-log", func(ctx context.Context, sw *store.Sweeps, dry bool) (int, error) {
			return sw.AuditLog(ctx, before(j.AuditRetention), dry)
		}))
	}
	return list
}

// guestRetention is PLATFORM_GUEST_RETENTION, or 30 days for a Config not
// built by config.Load.
func (a *App) guestRetention() time.Duration {
	if a.Config.Social.GuestRetention > 0 {
		return a.Config.Social.GuestRetention
	}
	return 30 * 24 * time.Hour
}

// gaugesEvery is the period of the counter job: PLATFORM_GAUGES_REFRESH,
// or a minute for a Config not built by config.Load.
func (a *App) gaugesEvery() time.Duration {
	if a.Config.GaugesRefresh > 0 {
		return a.Config.GaugesRefresh
	}
	return time.Minute
}
