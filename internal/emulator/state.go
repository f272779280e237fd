package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// stateVersion is the version of the state file's format. A file with
// another version (or that is not valid JSON) is ignored with a warning.
const stateVersion = 1

// defaultStateKeep is how many of the newest stored responses the state
// file keeps by default (Config.StateKeep).
const defaultStateKeep = 1000

// stateFile is the state file's content: the stored responses, oldest first.
type stateFile struct {
	Version   int             `json:"version"`
	Responses []stateResponse `json:"responses"`
}

type stateResponse struct {
	ID     string          `json:"id"`
	Resp   json.RawMessage `json:"response"`
	Prev   string          `json:"previous_response_id,omitempty"`
	Input  []stateItem     `json:"input"`
	Output []stateItem     `json:"output"`
}

// stateItem is a ctxItem as saved (Param, a position in the request that
// made it, is not).
type stateItem struct {
	Type              string       `json:"type"`
	ID                string       `json:"id,omitempty"`
	Role              string       `json:"role,omitempty"`
	Text              string       `json:"text,omitempty"`
	ServerLabel       string       `json:"server_label,omitempty"`
	Name              string       `json:"name,omitempty"`
	Arguments         string       `json:"arguments,omitempty"`
	ApprovalRequestID string       `json:"approval_request_id,omitempty"`
	Approve           bool         `json:"approve,omitempty"`
	Reason            string       `json:"reason,omitempty"`
	Tools             []ListedTool `json:"tools,omitempty"`
}

func toState(items []ctxItem) []stateItem {
	out := make([]stateItem, len(items))
	for i, it := range items {
		out[i] = stateItem{Type: it.Type, ID: it.ID, Role: it.Role, Text: it.Text, ServerLabel: it.ServerLabel, Name: it.Name,
			Arguments: it.Arguments, ApprovalRequestID: it.ApprovalRequestID, Approve: it.Approve, Reason: it.Reason, Tools: it.Tools}
	}
	return out
}

func fromState(items []stateItem) []ctxItem {
	out := make([]ctxItem, len(items))
	for i, it := range items {
		out[i] = ctxItem{Type: it.Type, ID: it.ID, Role: it.Role, Text: it.Text, ServerLabel: it.ServerLabel, Name: it.Name,
			Arguments: it.Arguments, ApprovalRequestID: it.ApprovalRequestID, Approve: it.Approve, Reason: it.Reason, Tools: it.Tools}
	}
	return out
}

// load fills the store from the state file at path. A missing file is an
// empty state; a file that cannot be read is an error; a file that is not
// this version's JSON is ignored with a warning (it is replaced by the next
// stored response), so that a damaged file never stops the emulator.
func (s *store) load(path string, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the emulator state file: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		log.Warn("ignoring the emulator state file: it is not valid JSON; starting with no stored responses (the file is replaced when the next response is stored)",
			"file", path, "error", err.Error())
		return nil
	}
	if f.Version != stateVersion {
		log.Warn(fmt.Sprintf("ignoring the emulator state file: its version is %d, this emulator reads version %d; starting with no stored responses (the file is replaced when the next response is stored)", f.Version, stateVersion),
			"file", path)
		return nil
	}
	for _, r := range f.Responses {
		if r.ID == "" || len(r.Resp) == 0 || r.Resp[0] != '{' {
			log.Warn("ignoring the emulator state file: a response in it has no id or no valid body (a JSON object); starting with no stored responses", "file", path)
			s.reset()
			return nil
		}
		s.put(r.ID, &stored{resp: r.Resp, prev: r.Prev, input: fromState(r.Input), output: fromState(r.Output)})
	}
	log.Info("loaded the emulator state file", "file", path, "responses", len(f.Responses))
	return nil
}

func (s *store) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID, s.items, s.answeredIn, s.madeIn, s.order = map[string]*stored{}, map[string]ctxItem{}, map[string]string{}, map[string]string{}, nil
}

// save writes the newest keep responses to path atomically: a temporary
// file in the same directory, then a rename over the old one.
func (s *store) save(path string, keep int) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.RLock()
	ids := s.order[max(0, len(s.order)-keep):]
	f := stateFile{Version: stateVersion, Responses: make([]stateResponse, 0, len(ids))}
	for _, id := range ids {
		st := s.byID[id]
		f.Responses = append(f.Responses, stateResponse{ID: id, Resp: st.resp, Prev: st.prev, Input: toState(st.input), Output: toState(st.output)})
	}
	s.mu.RUnlock()
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
