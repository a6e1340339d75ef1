package player

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/platform"
)

// Social actions.
const (
	ActionRequest = "request"
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
	ActionRemove  = "remove"
	ActionBlock   = "block"
	ActionUnblock = "unblock"
)

// Transition is one allowed step of the social state machine, seen from
// the actor's side. From == To marks an idempotent repeat that changes
// nothing.
type Transition struct {
	Action string `json:"action"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// SocialMachine describes the relationship state machine for clients.
type SocialMachine struct {
	States      []string     `json:"states"`
	Actions     []string     `json:"actions"`
	Transitions []Transition `json:"transitions"`
}

// socialTransitions is the whole state machine. An (action, state) pair
// missing here is SOCIAL_INVALID_TRANSITION.
var socialTransitions = []Transition{
	{ActionRequest, StateNone, StateOutgoing},
	{ActionRequest, StateOutgoing, StateOutgoing},
	{ActionRequest, StateIncoming, StateFriend}, // they asked first: accept
	{ActionRequest, StateFriend, StateFriend},
	{ActionAccept, StateIncoming, StateFriend},
	{ActionAccept, StateFriend, StateFriend},
	{ActionDecline, StateIncoming, StateNone},
	{ActionDecline, StateNone, StateNone},
	{ActionCancel, StateOutgoing, StateNone},
	{ActionCancel, StateNone, StateNone},
	{ActionRemove, StateFriend, StateNone},
	{ActionRemove, StateNone, StateNone},
	{ActionBlock, StateNone, StateBlocked},
	{ActionBlock, StateOutgoing, StateBlocked},
	{ActionBlock, StateIncoming, StateBlocked},
	{ActionBlock, StateFriend, StateBlocked},
	{ActionBlock, StateBlocked, StateBlocked},
	{ActionUnblock, StateBlocked, StateNone},
	{ActionUnblock, StateNone, StateNone},
}

// SocialStates lists the relationship states.
var SocialStates = []string{StateNone, StateOutgoing, StateIncoming, StateFriend, StateBlocked}

// SocialActions lists the social actions.
var SocialActions = []string{ActionRequest, ActionAccept, ActionDecline, ActionCancel, ActionRemove, ActionBlock, ActionUnblock}

// StateMachine returns the social state machine, as served in /api/meta.
func StateMachine() SocialMachine {
	return SocialMachine{States: slices.Clone(SocialStates), Actions: slices.Clone(SocialActions), Transitions: slices.Clone(socialTransitions)}
}

// nextState returns the state an action leads to from state.
func nextState(action, state string) (string, bool) {
	for _, t := range socialTransitions {
		if t.Action == action && t.From == state {
			return t.To, true
		}
	}
	return "", false
}

// AllowedActions lists the actions that change a relationship in state.
func AllowedActions(state string) []string {
	out := []string{}
	for _, t := range socialTransitions {
		if t.From == state && t.To != state {
			out = append(out, t.Action)
		}
	}
	return out
}

// SocialEntry is one relationship in the social view.
type SocialEntry struct {
	Player         PlayerRef `json:"player"`
	State          string    `json:"state"`
	Since          time.Time `json:"since"`
	AllowedActions []string  `json:"allowedActions"`
}

// SocialCounts counts relationships by state.
type SocialCounts struct {
	Friends  int `json:"friends"`
	Incoming int `json:"incoming"`
	Outgoing int `json:"outgoing"`
	Blocked  int `json:"blocked"`
}

// SocialLimits are the social caps.
type SocialLimits struct {
	MaxFriends          int `json:"maxFriends"`
	MaxOutgoingRequests int `json:"maxOutgoingRequests"`
	MaxBlocked          int `json:"maxBlocked"`
	MaxIncomingRequests int `json:"maxIncomingRequests"`
}

// Social is one page of a player's social graph: without a cursor the
// first page of every list, with one the next page of the list the cursor
// belongs to (the other lists empty). Counts are always whole.
type Social struct {
	Friends  []SocialEntry `json:"friends"`
	Incoming []SocialEntry `json:"incoming"`
	Outgoing []SocialEntry `json:"outgoing"`
	Blocked  []SocialEntry `json:"blocked"`
	// NextCursor has, for each list with more entries, the cursor of its
	// next page.
	NextCursor SocialCursors `json:"nextCursor"`
	Counts     SocialCounts  `json:"counts"`
	Limits     SocialLimits  `json:"limits"`
}

// SocialCursors are the opaque cursors of the lists' next pages.
type SocialCursors struct {
	Friends  string `json:"friends,omitempty"`
	Incoming string `json:"incoming,omitempty"`
	Outgoing string `json:"outgoing,omitempty"`
	Blocked  string `json:"blocked,omitempty"`
}

// SocialQuery selects a page of the social view.
type SocialQuery struct {
	// Limit is the page size of each list: DefaultSocialPage when nil,
	// 1 to MaxSocialPage.
	Limit *int
	// Cursor continues one list where a previous page ended.
	Cursor string
}

// Social page sizes.
const (
	DefaultSocialPage = 50
	MaxSocialPage     = 200
)

// SocialSummary is the part of the social graph the bootstrap carries.
type SocialSummary struct {
	Counts SocialCounts `json:"counts"`
	Limits SocialLimits `json:"limits"`
}

func (s *Service) socialLimits() SocialLimits {
	return SocialLimits{MaxFriends: s.limits.MaxFriends, MaxOutgoingRequests: s.limits.MaxOutgoingRequests, MaxBlocked: s.limits.MaxBlocked,
		MaxIncomingRequests: s.limits.MaxIncomingRequests}
}

// socialLists are the lists of the social view in response order.
var socialLists = []string{StateFriend, StateIncoming, StateOutgoing, StateBlocked}

// Social returns a page of the player's friends, requests and blocks,
// newest first. Players who blocked the viewer appear nowhere: a block is
// never revealed.
func (s *Service) Social(ctx context.Context, playerID uuid.UUID, q SocialQuery) (*Social, error) {
	limit, err := pageLimit(q.Limit, DefaultSocialPage, MaxSocialPage)
	if err != nil {
		return nil, err
	}
	var pages []EdgePage
	if q.Cursor == "" {
		for _, st := range socialLists {
			pages = append(pages, EdgePage{State: st, Limit: limit + 1})
		}
	} else {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(socialLists, c.kind) {
			return nil, errBadCursor
		}
		pages = []EdgePage{{State: c.kind, After: &EdgeKey{Since: c.at, Other: c.id}, Limit: limit + 1}}
	}
	edges, err := s.store.EdgePages(ctx, playerID, pages)
	if err != nil {
		return nil, fmt.Errorf("social: %w", err)
	}
	counts, err := s.store.EdgeCounts(ctx, playerID)
	if err != nil {
		return nil, fmt.Errorf("social counts: %w", err)
	}
	// UNION ALL promises no order, so the lists' order is restored here.
	slices.SortFunc(edges, func(a, b Edge) int {
		if c := b.Since.Compare(a.Since); c != 0 {
			return c
		}
		return strings.Compare(a.Other.ID.String(), b.Other.ID.String())
	})
	out := &Social{Friends: []SocialEntry{}, Incoming: []SocialEntry{}, Outgoing: []SocialEntry{}, Blocked: []SocialEntry{},
		Counts: s.socialSummary(counts).Counts, Limits: s.socialLimits()}
	lists := map[string]*[]SocialEntry{StateFriend: &out.Friends, StateIncoming: &out.Incoming, StateOutgoing: &out.Outgoing, StateBlocked: &out.Blocked}
	next := map[string]*string{StateFriend: &out.NextCursor.Friends, StateIncoming: &out.NextCursor.Incoming,
		StateOutgoing: &out.NextCursor.Outgoing, StateBlocked: &out.NextCursor.Blocked}
	for _, e := range edges {
		list := lists[e.State]
		if list == nil {
			continue
		}
		if len(*list) == limit { // the extra row only says there is more
			last := (*list)[limit-1]
			*next[e.State] = encodeCursor(cursor{kind: e.State, at: last.Since, id: last.Player.ID})
			continue
		}
		*list = append(*list, SocialEntry{Player: e.Other, State: e.State, Since: e.Since.UTC(), AllowedActions: AllowedActions(e.State)})
	}
	return out, nil
}

// SocialActionInput is a social action request. Target is a player id or a
// nickname.
type SocialActionInput struct {
	Action string `json:"action"`
	Target string `json:"target"`
}

// SocialActionResult tells the actor what the action did.
type SocialActionResult struct {
	Action         string    `json:"action"`
	Target         PlayerRef `json:"target"`
	PreviousState  string    `json:"previousState"`
	State          string    `json:"state"`
	Changed        bool      `json:"changed"`
	AllowedActions []string  `json:"allowedActions"`
	// targetSees tells whether the target may hear of the action.
	targetSees bool
}

// resolvePlayer finds a player by id or nickname. A target that is neither
// an id nor a well-formed nickname names nobody and is not looked up.
func (s *Service) resolvePlayer(ctx context.Context, r Reader, target string) (*PlayerRef, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, platform.Invalid("target", "is required: a player id or nickname")
	}
	var (
		p   *PlayerRef
		err = ErrNotFound
	)
	if id, perr := uuid.Parse(target); perr == nil && len(target) == 36 {
		p, err = r.PlayerByID(ctx, id)
	} else if nick := account.NormalizeNickname(target); account.ValidateNickname(nick) == nil {
		p, err = r.PlayerByNickname(ctx, account.NicknameKey(nick))
	}
	if errors.Is(err, ErrNotFound) {
		return nil, platform.Errorf(platform.KindNotFound, CodePlayerNotFound, "No player %.40q", target)
	}
	return p, err
}

// Act applies a social action. Every action is idempotent: repeating it
// answers the same state with Changed false. The target's side follows the
// actor's, except that a block by the target is never revealed: the actor
// sees their own side only, as if the target simply did not answer.
func (s *Service) Act(ctx context.Context, playerID uuid.UUID, in SocialActionInput) (*SocialActionResult, error) {
	if !slices.Contains(SocialActions, in.Action) {
		return nil, platform.Invalid("action", "must be one of "+strings.Join(SocialActions, ", "))
	}
	target, err := s.resolvePlayer(ctx, s.store, in.Target)
	if err != nil {
		return nil, err
	}
	if target.ID == playerID {
		return nil, platform.Errorf(platform.KindInvalid, CodeSocialSelf, "You cannot %s yourself", in.Action)
	}
	var res *SocialActionResult
	err = s.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		res, err = s.actTx(ctx, tx, playerID, *target, in.Action)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("social %s: %w", in.Action, err)
	}
	if res.Changed {
		s.events.SocialChanged(ctx, SocialChange{Actor: playerID, Target: target.ID, Action: in.Action, TargetSees: res.targetSees})
	}
	return res, nil
}

func (s *Service) actTx(ctx context.Context, tx Tx, me uuid.UUID, target PlayerRef, action string) (*SocialActionResult, error) {
	now := s.clock()
	mine, theirs, err := lockedEdges(ctx, tx, now, me, target.ID)
	if err != nil {
		return nil, err
	}
	next, ok := nextState(action, mine)
	if !ok {
		return nil, (&platform.Error{Kind: platform.KindConflict, Code: CodeSocialInvalidTransition,
			Message: fmt.Sprintf("Cannot %s a player whose state is %s", action, mine),
			Details: map[string]any{"state": mine, "action": action, "allowedActions": AllowedActions(mine)}})
	}
	res := &SocialActionResult{Action: action, Target: target, PreviousState: mine, State: next, Changed: next != mine, AllowedActions: AllowedActions(next)}
	if !res.Changed {
		return res, nil
	}
	ch := edgeChange{me: me, target: target, theirs: theirs, next: next, now: now}
	// A block or an unblock is never told to its target, nor is anything
	// done by a player the target blocked.
	res.targetSees = !ch.hiddenBlock() && next != StateBlocked && mine != StateBlocked
	if err := s.applyEdge(ctx, tx, ch); err != nil {
		return nil, err
	}
	return res, nil
}

// lockedEdges locks both players' profiles (creating them if need be) and
// returns the edge from me to them and theirs back.
func lockedEdges(ctx context.Context, tx Tx, now time.Time, me, them uuid.UUID) (mine, theirs string, err error) {
	if err := tx.EnsureProfiles(ctx, now, me, them); err != nil {
		return "", "", err
	}
	if err := tx.LockProfiles(ctx, me, them); err != nil {
		return "", "", err
	}
	if mine, err = tx.Edge(ctx, me, them); err != nil {
		return "", "", err
	}
	if theirs, err = tx.Edge(ctx, them, me); err != nil {
		return "", "", err
	}
	return mine, theirs, nil
}

// edgeChange is one social action about to be written: the target's edge
// back to me as it is, and the state my edge moves to.
type edgeChange struct {
	me     uuid.UUID
	target PlayerRef
	theirs string
	next   string
	now    time.Time
}

// hiddenBlock reports whether the target blocked me, which I must not
// learn from what my action does.
func (c edgeChange) hiddenBlock() bool { return c.theirs == StateBlocked }

// applyEdge checks the caps the new state is under and writes both edges.
func (s *Service) applyEdge(ctx context.Context, tx Tx, c edgeChange) error {
	me, target, now := c.me, c.target, c.now
	switch c.next {
	case StateOutgoing:
		if err := s.checkCap(ctx, tx, me, StateOutgoing, s.limits.MaxOutgoingRequests, "pending friend requests"); err != nil {
			return err
		}
		if err := s.checkCap(ctx, tx, me, StateFriend, s.limits.MaxFriends, "friends"); err != nil {
			return err
		}
		// A hidden block already swallows the request; refusing it
		// would reveal the block.
		if !c.hiddenBlock() {
			if err := s.checkIncoming(ctx, tx, target); err != nil {
				return err
			}
		}
		if err := tx.SetEdge(ctx, me, target.ID, StateOutgoing, now); err != nil {
			return err
		}
		if !c.hiddenBlock() {
			return tx.SetEdge(ctx, target.ID, me, StateIncoming, now)
		}
	case StateFriend:
		// Both sides are locked, so concurrent accepts cannot both pass
		// the cap.
		if err := s.checkCap(ctx, tx, me, StateFriend, s.limits.MaxFriends, "friends"); err != nil {
			return err
		}
		if err := s.checkCap(ctx, tx, target.ID, StateFriend, s.limits.MaxFriends, "friends"); err != nil {
			return platform.Errorf(platform.KindConflict, CodeSocialLimitReached,
				"%s cannot take more friends", target.Nickname).WithDetails("limit", s.limits.MaxFriends)
		}
		if err := tx.SetEdge(ctx, me, target.ID, StateFriend, now); err != nil {
			return err
		}
		return tx.SetEdge(ctx, target.ID, me, StateFriend, now)
	case StateBlocked:
		if err := s.checkCap(ctx, tx, me, StateBlocked, s.limits.MaxBlocked, "blocked players"); err != nil {
			return err
		}
		if err := tx.SetEdge(ctx, me, target.ID, StateBlocked, now); err != nil {
			return err
		}
		if !c.hiddenBlock() && c.theirs != StateNone {
			return tx.DeleteEdge(ctx, target.ID, me)
		}
	case StateNone:
		if err := tx.DeleteEdge(ctx, me, target.ID); err != nil {
			return err
		}
		// The other side mirrors ours unless it is their own block. After
		// an unblock, a request they sent while blocked is dropped, as a
		// decline would.
		if !c.hiddenBlock() && c.theirs != StateNone {
			return tx.DeleteEdge(ctx, target.ID, me)
		}
	}
	return nil
}

// checkCap fails with SOCIAL_LIMIT_REACHED when the player already has
// limit relationships in state.
func (s *Service) checkCap(ctx context.Context, tx Tx, playerID uuid.UUID, state string, limit int, what string) error {
	n, err := tx.CountEdges(ctx, playerID, state)
	if err != nil {
		return err
	}
	if n >= limit {
		return platform.Errorf(platform.KindConflict, CodeSocialLimitReached, "You already have %d %s, the most allowed", n, what).
			WithDetails("limit", limit)
	}
	return nil
}

// checkIncoming fails with SOCIAL_REQUESTS_FULL when target already has
// the most friend requests waiting that a player may have.
func (s *Service) checkIncoming(ctx context.Context, tx Tx, target PlayerRef) error {
	n, err := tx.CountEdges(ctx, target.ID, StateIncoming)
	if err != nil {
		return err
	}
	if n >= s.limits.MaxIncomingRequests {
		return platform.Errorf(platform.KindConflict, CodeSocialRequestsFull,
			"%s has too many friend requests waiting; try again later", target.Nickname).
			WithDetails("limit", s.limits.MaxIncomingRequests)
	}
	return nil
}

// SocialSummary returns the counts and limits the bootstrap shows.
func (s *Service) SocialSummary(ctx context.Context, playerID uuid.UUID) (*SocialSummary, error) {
	counts, err := s.store.EdgeCounts(ctx, playerID)
	if err != nil {
		return nil, fmt.Errorf("social summary: %w", err)
	}
	return s.socialSummary(counts), nil
}

func (s *Service) socialSummary(counts map[string]int) *SocialSummary {
	return &SocialSummary{Counts: SocialCounts{Friends: counts[StateFriend], Incoming: counts[StateIncoming],
		Outgoing: counts[StateOutgoing], Blocked: counts[StateBlocked]}, Limits: s.socialLimits()}
}
