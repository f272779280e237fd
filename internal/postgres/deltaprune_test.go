package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/internal/testdb"
)

// TestTurnStart_PruningDeltasReadsOnlyDeltas: a turn's start deletes the
// deltas of the turns before it. In a long conversation (20,000 stored
// events, 30 of them deltas) that delete reads the deltas only, not the
// whole history, so a turn's start does not grow with the conversation.
func TestTurnStart_PruningDeltasReadsOnlyDeltas(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO conversations (id, title) VALUES ('conv_long', 'long');
		INSERT INTO conversation_events (conversation_id, id, event, data)
		  SELECT 'conv_long', n, CASE WHEN n > 19970 THEN 'text.delta' ELSE 'item.done' END, '{}' FROM generate_series(1, 20000) n;
		ANALYZE conversation_events`); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The statement as Turns.Open and Turns.Start send it.
	var plan []struct {
		Plan struct {
			Plans []planNode `json:"Plans"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM conversation_events WHERE conversation_id = $1 AND event = 'text.delta'`, "conv_long").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 || len(plan[0].Plan.Plans) != 1 {
		t.Fatalf("EXPLAIN: %v %s", err, raw)
	}
	scan := plan[0].Plan.Plans[0]
	if read := scan.ActualRows + scan.RemovedByFilter; read > 30 || scan.ActualRows != 30 {
		t.Errorf("the delete read %d rows (%s on %q) to remove %d deltas of a 20,000-event history; want the 30 deltas alone",
			read, scan.NodeType, scan.IndexName, scan.ActualRows)
	}
}

type planNode struct {
	NodeType        string `json:"Node Type"`
	IndexName       string `json:"Index Name"`
	ActualRows      int    `json:"Actual Rows"`
	RemovedByFilter int    `json:"Rows Removed by Filter"`
}
