package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
)

// handleCatalog serves the content catalog with its ETag; a client that
// sends the current ETag in If-None-Match gets 304 and no body. Every
// client fetches it at start, so its answer is made once per version.
func handleCatalog(log *slog.Logger, players *player.Service) http.Handler {
	answers := latestAnswers[*player.Catalog, *answer]{make: func(cat *player.Catalog) *answer {
		return jsonAnswer(cat, answerOptions{etag: cat.ETag, cacheControl: "public, no-cache"})
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cat, err := players.CatalogForClients(r.Context())
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		answers.of(cat).serve(w, r)
	})
}

// bootstrapResponse adds the signed-in user to the player's state.
type bootstrapResponse struct {
	User *account.User `json:"user"`
	*player.Bootstrap
}

func handleBootstrap(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := principalFrom(r).User
		b, err := players.Bootstrap(r.Context(), player.Viewer{ID: u.ID, Nickname: u.Nickname, CreatedAt: u.CreatedAt})
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, bootstrapResponse{User: u, Bootstrap: b})
	})
}

func playerID(r *http.Request) uuid.UUID { return principalFrom(r).User.ID }

func handleDecks(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := players.Decks(r.Context(), playerID(r))
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, list)
	})
}

// handleImportDeck answers 201 for a new deck and 200 for one the player
// already had.
func handleImportDeck(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[player.ImportDeckInput](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.ImportDeck(r.Context(), playerID(r), in)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		status := http.StatusCreated
		if res.Duplicate {
			status = http.StatusOK
		}
		respond(w, status, res)
	})
}

type defaultDeckRequest struct {
	DeckID string `json:"deckId"`
	id     uuid.UUID
}

func (req *defaultDeckRequest) Validate() error {
	id, err := parseID("deckId", req.DeckID)
	req.id = id
	return err
}

// parseID reads a required UUID field.
func parseID(field, s string) (uuid.UUID, error) {
	if s == "" {
		return uuid.Nil, platform.Invalid(field, "is required")
	}
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.Nil, platform.Invalid(field, "must be a UUID")
	}
	return id, nil
}

func handleDefaultDeck(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[defaultDeckRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.SetDefaultDeck(r.Context(), playerID(r), in.id)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, res)
	})
}

func handleSocial(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, cursor, err := pageParams(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		s, err := players.Social(r.Context(), playerID(r), player.SocialQuery{Limit: limit, Cursor: cursor})
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, s)
	})
}

func handleSocialAction(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[player.SocialActionInput](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.Act(r.Context(), playerID(r), in)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, res)
	})
}

func handleLobbies(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, cursor, err := pageParams(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		q := player.LobbyQuery{Queue: r.URL.Query().Get("queue"), Limit: limit, Cursor: cursor}
		list, err := players.Lobbies(r.Context(), playerID(r), q)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, list)
	})
}

func handleCreateLobby(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[player.CreateLobbyInput](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.CreateLobby(r.Context(), playerID(r), in)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusCreated, res)
	})
}

type joinLobbyRequest struct {
	LobbyID string `json:"lobbyId"`
	Code    string `json:"code"`
	in      player.JoinLobbyInput
}

func (req *joinLobbyRequest) Validate() error {
	req.in.Code = req.Code
	if req.LobbyID != "" {
		id, err := parseID("lobbyId", req.LobbyID)
		if err != nil {
			return err
		}
		req.in.LobbyID = &id
	}
	return nil
}

func handleJoinLobby(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := decode[joinLobbyRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.JoinLobby(r.Context(), playerID(r), in.in)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, res)
	})
}

// lobbyIDFrom reads the {lobbyId} path segment.
func lobbyIDFrom(r *http.Request) (uuid.UUID, error) {
	return parseID("lobbyId", r.PathValue("lobbyId"))
}

func handleLobby(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := lobbyIDFrom(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		l, err := players.Lobby(r.Context(), playerID(r), id)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, l)
	})
}

// lobbyAction serves the bodiless lobby actions (leave, start, close).
func lobbyAction(log *slog.Logger, act func(r *http.Request, player, lobby uuid.UUID) (*player.LobbyResult, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := lobbyIDFrom(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := act(r, playerID(r), id)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, res)
	})
}

func handleLeaveLobby(log *slog.Logger, players *player.Service) http.Handler {
	return lobbyAction(log, func(r *http.Request, p, l uuid.UUID) (*player.LobbyResult, error) {
		return players.LeaveLobby(r.Context(), p, l)
	})
}

func handleStartLobby(log *slog.Logger, players *player.Service) http.Handler {
	return lobbyAction(log, func(r *http.Request, p, l uuid.UUID) (*player.LobbyResult, error) {
		return players.StartLobby(r.Context(), p, l)
	})
}

func handleCloseLobby(log *slog.Logger, players *player.Service) http.Handler {
	return lobbyAction(log, func(r *http.Request, p, l uuid.UUID) (*player.LobbyResult, error) {
		return players.CloseLobby(r.Context(), p, l)
	})
}

type readyRequest struct {
	Ready *bool `json:"ready"`
}

func (req *readyRequest) Validate() error {
	if req.Ready == nil {
		return platform.Invalid("ready", "is required: true or false")
	}
	return nil
}

func handleReadyLobby(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := lobbyIDFrom(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		in, err := decode[readyRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.SetReady(r.Context(), playerID(r), id, *in.Ready)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, res)
	})
}

type kickRequest struct {
	PlayerID string `json:"playerId"`
	id       uuid.UUID
}

func (req *kickRequest) Validate() error {
	id, err := parseID("playerId", req.PlayerID)
	req.id = id
	return err
}

func handleKickLobby(log *slog.Logger, players *player.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := lobbyIDFrom(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		in, err := decode[kickRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		res, err := players.KickFromLobby(r.Context(), playerID(r), id, in.id)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		respond(w, http.StatusOK, res)
	})
}

// pageParams reads the paging parameters of a list: limit (checked for
// range by the service) and the opaque cursor.
func pageParams(r *http.Request) (limit *int, cursor string, err error) {
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, "", platform.Invalid("limit", "must be an integer")
		}
		limit = &n
	}
	return limit, q.Get("cursor"), nil
}
