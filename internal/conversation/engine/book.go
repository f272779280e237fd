package engine

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/internal/conversation"
	"github.com/toolgate/toolgate/internal/conversation/book"
	"github.com/toolgate/toolgate/internal/conversation/record"
)

// Book is the conversation book: create, list, rename, delete, the
// transcript, a conversation's tools, grants, rule tries.
func (s *Service) Book() *book.Conversations { return s.book }

// bookTurns is the engine as the book's book.Turns.
type bookTurns struct{ s *Service }

func (b bookTurns) Approval(a conversation.Approval) conversation.Approval {
	return b.s.keeper.WithExpiry(present(a))
}

func (bookTurns) Present(a conversation.Approval) conversation.Approval { return present(a) }

func (bookTurns) Call(c conversation.GatewayCall) conversation.GatewayCall {
	return record.ShownCall(c)
}

func (b bookTurns) ApprovalTTL() time.Duration { return b.s.approvalTTL }

func (b bookTurns) Signal(ctx context.Context, sig conversation.Signal) error {
	return b.s.signal(ctx, sig)
}

func (b bookTurns) AwaitEnd(ctx context.Context, owner, id string, limit time.Duration) {
	b.s.awaitEnd(ctx, owner, id, limit)
}
