package httpapi

import (
	"net/http"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/adminui"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/role"
)

// addRoutes is the whole API surface, readable top to bottom. Paths that
// match no pattern get a JSON 404, and a wrong method a JSON 405 with
// Allow (see muxReplyWriter).
func addRoutes(mux *routeTable, d Deps) {
	mux.HandleWithoutDeadline("GET /api", handleHello())
	mux.HandleWithoutDeadline("GET /api/{$}", handleHello())
	mux.HandleWithoutDeadline("GET /api/health", handleHealth(d.System)) // the ping has its own bound
	mux.HandleWithoutDeadline("GET /api/meta", handleMeta(d.System))
	mux.HandleWithoutDeadline("GET /api/openapi.json", handleAPIDocument(d.Log, func(docs *documents) []byte { return docs.openapi }))
	mux.HandleWithoutDeadline("GET /api/schemas", handleAPIDocument(d.Log, func(docs *documents) []byte { return docs.schemas.index }))
	mux.HandleWithoutDeadline("GET /api/schemas/{name}", handleSchema(d.Log))

	// From memory; its database reads, once per refresh, have their own
	// bound (player.Options.ReadTimeout).
	mux.HandleWithoutDeadline("GET /api/content/catalog", handleCatalog(d.Log, d.Players))
	mux.Handle("GET /api/player/export", requirePlayer(d, handleExport(d)))
	mux.Handle("GET /api/player/bootstrap", requirePlayer(d, handleBootstrap(d.Log, d.Players)))
	mux.Handle("GET /api/player/decks", requirePlayer(d, handleDecks(d.Log, d.Players)))
	mux.Handle("POST /api/player/decks/import", requirePlayer(d, handleImportDeck(d.Log, d.Players)))
	mux.Handle("POST /api/player/decks/default", requirePlayer(d, handleDefaultDeck(d.Log, d.Players)))
	mux.Handle("GET /api/player/social", requirePlayer(d, handleSocial(d.Log, d.Players)))
	mux.Handle("POST /api/player/social/actions", requirePlayer(d, handleSocialAction(d.Log, d.Players)))
	mux.Handle("GET /api/player/lobbies", requirePlayer(d, handleLobbies(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies", requirePlayer(d, handleCreateLobby(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies/join", requirePlayer(d, handleJoinLobby(d.Log, d.Players)))
	mux.Handle("GET /api/player/lobbies/{lobbyId}", requirePlayer(d, handleLobby(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies/{lobbyId}/leave", requirePlayer(d, handleLeaveLobby(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies/{lobbyId}/ready", requirePlayer(d, handleReadyLobby(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies/{lobbyId}/kick", requirePlayer(d, handleKickLobby(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies/{lobbyId}/start", requirePlayer(d, handleStartLobby(d.Log, d.Players)))
	mux.Handle("POST /api/player/lobbies/{lobbyId}/close", requirePlayer(d, handleCloseLobby(d.Log, d.Players)))
	mux.HandleWithoutDeadline("GET "+eventsPath, setupDeadline(d.requestTimeout(), requirePlayer(d, handleEvents(d))))

	// From memory; the map seeds' database read, once per refresh, has
	// its own bound (liveops.Options.ReadTimeout).
	mux.HandleWithoutDeadline("GET /api/matchmaking/queues", handleQueues(d.Log, d.Matchmaking))
	// Authentication: better-auth's wire protocol, one mount per realm, and
	// the legacy mount /api/auth for players. Blocked account mutation
	// paths (update-user, change-password, change-email) never reach the
	// mux: guardAuthPath answers them first, for every method and variant.
	addAuthRoutes(mux, d, auth.MountPath(account.RealmPlayer), account.RealmPlayer)
	addAuthRoutes(mux, d, auth.MountPath(account.RealmAdmin), account.RealmAdmin)
	addAuthRoutes(mux, d, "/api/auth", account.RealmPlayer)

	// Profile changes, each confirmed by email (package profile).
	mux.Handle("POST /api/profile/request-profile-change", requirePlayer(d, handleRequestProfileChange(d)))
	mux.Handle("POST /api/profile/request-email-change", requirePlayer(d, requireFresh(d, handleRequestEmailChange(d))))
	mux.Handle("POST /api/profile/request-password-change", requirePlayer(d, handleRequestPasswordChange(d)))
	mux.Handle("POST /api/profile/confirm-change", handleConfirmChange(d))

	addAdminRoutes(mux, d)
	if d.Admin != nil {
		// The web console: server-rendered pages over the same plane.
		ui := adminui.New(adminui.Deps{Log: d.Log, Auth: d.Auth, Admin: d.Admin, Lifecycle: d.Lifecycle, StatusOf: statusOf,
			ClientIP: func(r *http.Request) string { return clientIP(r, d.Config.TrustedProxies) }})
		mux.Handle("/admin", ui)
		mux.Handle("/admin/", ui)
	}
	mux.Handle("GET /api/admin/bootstrap", requirePermission(d, role.ConsoleRead, handleAdminBootstrap(d)))
	mux.Handle("GET /api/liveops/admin-bootstrap", requirePermission(d, role.LiveOpsRead, handleLiveOpsAdminBootstrap(d)))
	mux.Handle("GET /api/testing/legacy-tools", handleTestingTools(d))
}

// addAuthRoutes lists the routes of one authentication mount. Only the
// player realm has sign-up: administrators are created by
// `platformctl admin create`.
func addAuthRoutes(mux *routeTable, d Deps, mount string, realm account.Realm) {
	if realm == account.RealmPlayer {
		mux.Handle("POST "+mount+"/sign-up/email", handleSignUp(d, realm))
		if mount == auth.MountPath(account.RealmPlayer) {
			addSocialRoutes(mux, d, mount)
		}
	}
	mux.Handle("POST "+mount+"/sign-in/email", handleSignIn(d, realm))
	mux.Handle("POST "+mount+"/sign-out", checkOrigin(d, handleSignOut(d, realm)))
	mux.Handle("GET "+mount+"/get-session", handleGetSession(d, realm))
	mux.Handle("GET "+mount+"/list-sessions", requireSession(d, realm, handleListSessions(d)))
	mux.Handle("POST "+mount+"/revoke-session", requireSession(d, realm, handleRevokeSession(d)))
	mux.Handle("POST "+mount+"/revoke-sessions", requireSession(d, realm, handleRevokeSessions(d)))
	mux.Handle("POST "+mount+"/revoke-other-sessions", requireSession(d, realm, handleRevokeOtherSessions(d)))
	mux.HandleWithoutDeadline("GET "+mount+"/ok", handleAuthOK())
	mux.Handle("POST "+mount+"/send-verification-email", checkOrigin(d, handleSendVerificationEmail(d, realm)))
	mux.Handle("GET "+mount+"/verify-email", handleVerifyEmail(d, realm))
	mux.Handle("POST "+mount+"/request-password-reset", checkOrigin(d, handleRequestPasswordReset(d, realm)))
	mux.Handle("GET "+mount+"/reset-password/{token}", handleResetPasswordLink(d, realm))
	mux.Handle("POST "+mount+"/reset-password", checkOrigin(d, handleResetPassword(d, realm)))
	addTwoFactorRoutes(mux, d, mount, realm)
	addPasskeyRoutes(mux, d, mount, realm)
	mux.Handle("POST "+mount+"/delete-user", requireSession(d, realm, handleDeleteUser(d, realm)))
	mux.Handle("GET "+mount+"/delete-user/callback", handleDeleteUserCallback(d, realm))
}

// addSocialRoutes lists the provider and guest routes of a player mount.
func addSocialRoutes(mux *routeTable, d Deps, mount string) {
	mux.Handle("POST "+mount+"/sign-in/social", handleSignInSocial(d))
	mux.Handle("GET "+mount+"/callback/{provider}", handleCallback(d))
	mux.Handle("POST "+mount+"/callback/{provider}", handleCallbackPost(d))
	mux.Handle("GET "+mount+"/error", handleAuthError(d))
	mux.Handle("POST "+mount+"/link-social", requireSession(d, account.RealmPlayer, handleLinkSocial(d)))
	mux.Handle("GET "+mount+"/list-accounts", requireSession(d, account.RealmPlayer, handleListAccounts(d)))
	mux.Handle("POST "+mount+"/unlink-account", requireSession(d, account.RealmPlayer, handleUnlinkAccount(d)))
	mux.Handle("POST "+mount+"/sign-in/anonymous", handleSignInAnonymous(d))
	mux.Handle("POST "+mount+"/delete-anonymous-user", requireSession(d, account.RealmPlayer, handleDeleteAnonymousUser(d)))
}
