package demomcp

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Forecast is one city's weather forecast.
type Forecast struct {
	City         string  `json:"city" jsonschema:"the city name"`
	Summary      string  `json:"summary" jsonschema:"a short description of the weather"`
	TemperatureC float64 `json:"temperature_c" jsonschema:"the expected temperature in degrees Celsius"`
}

// Alert is a weather alert that send_alert put in the outbox.
type Alert struct {
	City    string    `json:"city"`
	Message string    `json:"message"`
	SentAt  time.Time `json:"sent_at"`
}

// State is a snapshot of the demo server's data.
type State struct {
	Forecasts map[string]Forecast `json:"forecasts"` // by city name as stored
	Alerts    []Alert             `json:"alerts"`    // oldest first
	Calls     map[string]int      `json:"calls"`     // tools/call requests by tool name
}

// Call is one tools/call the server received: the tool and its arguments
// as sent (before validation).
type Call struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	At        time.Time       `json:"at"`
}

// maxCallLog bounds the call log, so a demo left running does not grow
// without end; the oldest calls are dropped first.
const maxCallLog = 10000

// seed is the state New and Reset start from.
var seed = []Forecast{
	{City: "Berlin", Summary: "Light rain clearing by evening", TemperatureC: 14},
	{City: "Lisbon", Summary: "Sunny with a light Atlantic breeze", TemperatureC: 24},
	{City: "Oslo", Summary: "Overcast with snow showers", TemperatureC: -2},
}

// store holds the state behind one mutex; tools run concurrently.
type store struct {
	now       func() time.Time
	mu        sync.Mutex
	forecasts map[string]Forecast // by cityKey, so lookups ignore case
	alerts    []Alert
	calls     map[string]int
	log       []Call // every tools/call, oldest first, at most maxCallLog
}

func newStore(now func() time.Time) *store {
	s := &store{now: now}
	s.reset()
	return s
}

func cityKey(city string) string { return strings.ToLower(strings.TrimSpace(city)) }

func (s *store) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forecasts = make(map[string]Forecast, len(seed))
	for _, f := range seed {
		s.forecasts[cityKey(f.City)] = f
	}
	s.alerts = nil
	s.calls = make(map[string]int)
	s.log = nil
}

func (s *store) snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{
		Forecasts: make(map[string]Forecast, len(s.forecasts)),
		Alerts:    slices.Clone(s.alerts),
		Calls:     maps.Clone(s.calls),
	}
	for _, f := range s.forecasts {
		st.Forecasts[f.City] = f
	}
	if st.Alerts == nil {
		st.Alerts = []Alert{} // "alerts": [] rather than null in /state
	}
	return st
}

func (s *store) countCall(tool string, args json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[tool]++
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	s.log = append(s.log, Call{Tool: tool, Arguments: slices.Clone(args), At: s.now().UTC()})
	if len(s.log) > maxCallLog {
		s.log = slices.Delete(s.log, 0, len(s.log)-maxCallLog)
	}
}

// callLog returns a copy of the call log, oldest first.
func (s *store) callLog() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call{}, s.log...)
}

func (s *store) get(city string) (Forecast, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.forecasts[cityKey(city)]
	return f, ok
}

// list returns the forecasts sorted by city.
func (s *store) list() []Forecast {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := slices.Collect(maps.Values(s.forecasts))
	slices.SortFunc(fs, func(a, b Forecast) int { return strings.Compare(a.City, b.City) })
	return fs
}

// set stores f, keeping the spelling of an existing city; it reports whether
// the city is new.
func (s *store) set(f Forecast) (Forecast, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.City = strings.TrimSpace(f.City)
	old, exists := s.forecasts[cityKey(f.City)]
	if exists {
		f.City = old.City
	}
	s.forecasts[cityKey(f.City)] = f
	return f, !exists
}

func (s *store) delete(city string) (Forecast, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.forecasts[cityKey(city)]
	delete(s.forecasts, cityKey(city))
	return f, ok
}

// deleteAll empties the forecasts and returns how many there were.
func (s *store) deleteAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.forecasts)
	clear(s.forecasts)
	return n
}

func (s *store) sendAlert(city, message string) Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Alert{City: strings.TrimSpace(city), Message: strings.TrimSpace(message), SentAt: s.now().UTC()}
	s.alerts = append(s.alerts, a)
	return a
}

// cities returns the known city names, sorted, for error messages.
func (s *store) cities() []string {
	var names []string
	for _, f := range s.list() {
		names = append(names, f.City)
	}
	return names
}
