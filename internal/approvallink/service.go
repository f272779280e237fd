package approvallink

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/policy"
)

// Service shows and redeems links. Nobody needs to be signed in: the token
// is the credential. A caller who is signed in (ctx carries them) must be
// the person the link was sent for.
type Service struct {
	store   Store
	decider Decider
	expiry  Expiry
	log     *slog.Logger
	now     func() time.Time
}

// NewService returns the links' service: decisions go through decider.
func NewService(store Store, decider Decider, expiry Expiry, log *slog.Logger) *Service {
	return &Service{store: store, decider: decider, expiry: expiry, log: log, now: time.Now}
}

// UseDecider makes d decide what links decide from now on (the inbox's
// shared decision, which decides a chat's request and an agent's held
// call alike). Call it before serving.
func (s *Service) UseDecider(d Decider) { s.decider = d }

// Input names a link and the request the page expects it to decide.
type Input struct {
	ApprovalRequestID string `json:"approval_request_id"`
	Token             string `json:"token"`
}

// DecideInput is Input with the person's optional reason.
type DecideInput struct {
	Input
	Reason *string `json:"reason"`
}

// Info is what a page may know of a link.
type Info struct {
	ID                string     `json:"id"`
	Decision          string     `json:"decision"` // approve or deny
	ExpiresAt         *time.Time `json:"expires_at"`
	UsedAt            *time.Time `json:"used_at"`
	PersonEmail       string     `json:"person_email"` // who it decides as
	ConversationTitle string     `json:"conversation_title"`
}

// View is the card a link opens, with the link.
type View struct {
	Link     Info                  `json:"link"`
	Approval conversation.Approval `json:"approval"`
}

func info(l Link) Info {
	return Info{ID: l.ID, Decision: l.Decision, ExpiresAt: l.ExpiresAt, UsedAt: l.UsedAt, PersonEmail: l.Person.Email,
		ConversationTitle: l.ConversationTitle}
}

// View returns the card of the request the link decides. It decides
// nothing and does not use the link up.
func (s *Service) View(ctx context.Context, in Input) (View, error) {
	l, err := s.check(ctx, in)
	if err != nil {
		return View{}, err
	}
	a, err := s.pending(ctx, l)
	if err != nil {
		return View{}, err
	}
	return View{Link: info(l), Approval: a}, nil
}

// Decide makes the link's decision on its request, as the person it was
// sent for, exactly once: of concurrent uses one decides and the others
// are told it was used. A decision that fails leaves the link unused.
func (s *Service) Decide(ctx context.Context, in DecideInput) (View, error) {
	l, err := s.check(ctx, in.Input)
	if err != nil {
		return View{}, err
	}
	h := hash(in.Token)
	usedAt, ok, err := s.store.Claim(ctx, h)
	if err != nil {
		return View{}, err
	}
	if !ok { // used (or out of time) since check read it
		if l, err = s.check(ctx, in.Input); err != nil {
			return View{}, err
		}
		return View{}, errUsed(l)
	}
	approve := l.Decision == Approve
	_, signedIn := auth.UserFrom(ctx)
	a, err := s.decider.Decide(auth.WithUser(ctx, l.Person),
		conversation.Decision{ApprovalRequestID: l.ApprovalRequestID, Approve: &approve, Reason: in.Reason})
	if err != nil {
		if rerr := s.store.Release(context.WithoutCancel(ctx), h, usedAt); rerr != nil {
			s.log.WarnContext(ctx, "a link whose decision failed could not be released; it stays used", "link_id", l.ID, "error", rerr)
		}
		return View{}, s.refused(l, err)
	}
	l.UsedAt = &usedAt
	s.audit(ctx, l, a, signedIn)
	return View{Link: info(l), Approval: s.shown(a)}, nil
}

// check finds the link in's token names and says why it cannot be used,
// if it cannot.
func (s *Service) check(ctx context.Context, in Input) (Link, error) {
	f := apperr.Fields{}
	if in.Token == "" {
		f.Add("token", "token is required: the part of the link after #")
	}
	if in.ApprovalRequestID == "" {
		f.Add("approval_request_id", "approval_request_id is required: the request the link's page shows")
	}
	if err := f.Err("invalid_link_request", "the link request is incomplete: "+f.Join()); err != nil {
		return Link{}, err
	}
	if !wellFormed(in.Token) {
		return Link{}, errInvalid()
	}
	l, err := s.store.ByHash(ctx, hash(in.Token))
	if apperr.KindOf(err) == apperr.NotFound {
		return Link{}, errInvalid()
	}
	if err != nil {
		return Link{}, err
	}
	if l.ApprovalRequestID != in.ApprovalRequestID {
		return Link{}, apperr.NotFoundf("link_other_request",
			"this link is for another approval request, not %q: nothing was decided; open the link from the message as it came", in.ApprovalRequestID)
	}
	if u, ok := auth.UserFrom(ctx); ok && u.ID != l.Person.ID {
		return Link{}, apperr.New(apperr.Forbidden, "link_other_person",
			"this link was sent for another person, and you are signed in as %s: only they can decide with it; nothing was decided", u.Email)
	}
	if l.Person.Disabled {
		return Link{}, apperr.New(apperr.Forbidden, "account_disabled", "the account this link was sent for is disabled: nothing was decided; ask an admin")
	}
	if l.UsedAt != nil {
		return Link{}, errUsed(l)
	}
	if l.ExpiresAt != nil && !s.now().Before(*l.ExpiresAt) {
		return Link{}, errExpired(*l.ExpiresAt)
	}
	return l, nil
}

// pending reads the request as the card shows it; one no longer pending
// (or out of time) is refused saying so.
func (s *Service) pending(ctx context.Context, l Link) (conversation.Approval, error) {
	a, err := s.store.Approval(ctx, l.Person.ID, l.ApprovalRequestID)
	if err != nil {
		return a, err
	}
	a = s.shown(a)
	if a.State != conversation.Pending {
		return a, errDecided(a)
	}
	if a.ExpiresAt != nil && !s.now().Before(*a.ExpiresAt) {
		return a, errExpired(*a.ExpiresAt)
	}
	return a, nil
}

// shown is a as the chat's card shows it (the engine's present): its
// arguments and correction redacted, its choices, its expiry.
func (s *Service) shown(a conversation.Approval) conversation.Approval {
	a = s.expiry.WithExpiry(a)
	a.Arguments, a.Redacted = conversation.Redact(a.StoredArguments)
	a.Correction = conversation.ShownCorrection(a.StoredCorrection)
	if a.Redacted == nil {
		a.Redacted = []string{}
	}
	if len(a.Annotations) == 0 {
		a.Annotations = []byte("{}")
	}
	a.Reason.Policy = policy.Always
	if a.Choices == nil { // asked before cards had choices
		a.Choices = policy.AllChoices()
		if a.AskLock != nil {
			a.Choices = policy.LockedChoices(a.Choices)
		}
	}
	return a
}

// refused is the answer when the decision was refused: the request was
// decided meanwhile, or ran out of time, in the link's words.
func (s *Service) refused(l Link, err error) error {
	e, ok := apperr.As(err)
	if !ok {
		return err
	}
	switch e.Code {
	case "approval_already_decided", "approval_superseded", "approval_withdrawn", "approval_not_pending", "held_call_gone":
		out := apperr.New(apperr.Conflict, "link_request_decided", "this request was decided already (%s), by link or in Toolgate: this link changed nothing", e.Message)
		out.Details = e.Details
		return out
	case "approval_expired":
		out := apperr.New(apperr.Conflict, "link_expired", "this link's request expired: nobody decided in time, so the link changed nothing (%s)", e.Message)
		out.Details = e.Details
		return out
	}
	return err
}

func (s *Service) audit(ctx context.Context, l Link, a conversation.Approval, signedIn bool) {
	after, _ := json.Marshal(map[string]any{"approval_request_id": l.ApprovalRequestID, "conversation_id": a.ConversationID,
		"link_id": l.ID, "decision": l.Decision, "delivery_id": l.DeliveryID, "state": a.State, "signed_in": signedIn,
		"reason": a.DecisionReason})
	label, tool := a.ServerLabel, a.ToolName
	err := s.store.Audit(context.WithoutCancel(ctx), policy.AuditEntry{Actor: l.Person.Email, ActorID: l.Person.ID, Action: ActionUsed,
		ServerLabel: &label, ToolName: &tool, After: after})
	if err != nil {
		s.log.WarnContext(ctx, "the audit entry of a decision by link could not be written; the decision's own entry was", "link_id", l.ID, "error", err)
	}
}

func errInvalid() error {
	return apperr.NotFoundf("link_invalid",
		"this link is not one Toolgate made, or it was changed or cut short: nothing was decided; open the link from the message as it came, or decide in Toolgate")
}

func errUsed(l Link) error {
	at := ""
	if l.UsedAt != nil {
		at = " at " + l.UsedAt.UTC().Format(time.RFC3339)
	}
	e := apperr.New(apperr.Conflict, "link_used", "this link was used already%s: each link works once, and this use changed nothing", at)
	e.Details = map[string]any{"link": info(l)}
	return e
}

func errExpired(at time.Time) error {
	return apperr.New(apperr.Conflict, "link_expired",
		"this link expired with its request at %s: nothing was decided, and the tool does not run; ask the model again if it is still needed",
		at.UTC().Format(time.RFC3339))
}

func errDecided(a conversation.Approval) error {
	e := apperr.New(apperr.Conflict, "link_request_decided", "this request is %s already: the link changes nothing", a.State)
	e.Details = map[string]any{"approval": a}
	return e
}
