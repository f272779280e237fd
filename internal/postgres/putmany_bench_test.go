package postgres_test

import (
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/internal/conversation"
)

// BenchmarkPutMany_500Conversations stores one text delta for each of
// 500 conversations: in one PutMany, and (the baseline, how deltas were
// stored before the group commit) in 500 Appends. Reported per delta.
func BenchmarkPutMany_500Conversations(b *testing.B) {
	store, _ := newConversations(b)
	r := store.Repo()
	const n = 500
	var in []conversation.ConvEvents
	for i := range n {
		id := fmt.Sprintf("conv_%03d", i)
		if _, err := r.Conversations.Create(b.Context(), owner, id, "t"); err != nil {
			b.Fatal(err)
		}
		in = append(in, conversation.ConvEvents{ConversationID: id, Turn: "turn", First: 1, Events: deltas(id, 1)})
	}
	b.Run("PutMany", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Events.PutMany(b.Context(), in); err != nil {
				b.Fatal(err)
			}
			for i := range in {
				in[i].First++
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/delta")
	})
	b.Run("AppendEventsEach", func(b *testing.B) {
		for b.Loop() {
			for _, c := range in {
				if _, err := r.Events.Append(b.Context(), c.ConversationID, c.Turn, c.Events); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/delta")
	})
}
