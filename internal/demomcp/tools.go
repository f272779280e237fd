package demomcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type cityInput struct {
	City string `json:"city" jsonschema:"the city name, e.g. Berlin"`
}

type noInput struct{}

type setForecastInput struct {
	City         string  `json:"city" jsonschema:"the city name, e.g. Berlin"`
	Summary      string  `json:"summary" jsonschema:"a short description of the weather, e.g. Sunny spells"`
	TemperatureC float64 `json:"temperature_c" jsonschema:"the expected temperature in degrees Celsius"`
}

type sendAlertInput struct {
	City    string `json:"city" jsonschema:"the city whose residents are alerted"`
	Message string `json:"message" jsonschema:"the alert text people will receive"`
}

// forecastList is list_forecasts' structured output.
type forecastList struct {
	Forecasts []Forecast `json:"forecasts"`
}

// hints builds annotations with every hint set, so that discovery tests see
// exactly what was declared rather than MCP defaults.
func hints(title string, readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{
		Title:           title,
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  idempotent,
		OpenWorldHint:   &openWorld,
	}
}

func addTools(server *mcp.Server, s *store) {
	mcp.AddTool(server, &mcp.Tool{
		Name:        "get_forecast",
		Title:       "Get forecast",
		Description: "Get the weather forecast for one city.",
		Annotations: hints("Get forecast", true, false, true, false),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in cityInput) (*mcp.CallToolResult, Forecast, error) {
		f, ok := s.get(in.City)
		if !ok {
			return nil, Forecast{}, unknownCity(s, in.City)
		}
		return text("Forecast for %s: %s, %s.", f.City, f.Summary, celsius(f.TemperatureC)), f, nil
	})

	mcp.AddTool(server, &mcp.Tool{
		Name:        "list_forecasts",
		Title:       "List forecasts",
		Description: "List the weather forecasts of all known cities.",
		Annotations: hints("List forecasts", true, false, true, false),
	}, func(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, forecastList, error) {
		fs := s.list()
		if len(fs) == 0 {
			return text("There are no forecasts."), forecastList{Forecasts: []Forecast{}}, nil
		}
		lines := []string{fmt.Sprintf("%d forecasts:", len(fs))}
		for _, f := range fs {
			lines = append(lines, fmt.Sprintf("- %s: %s, %s", f.City, f.Summary, celsius(f.TemperatureC)))
		}
		return text("%s", strings.Join(lines, "\n")), forecastList{Forecasts: fs}, nil
	})

	mcp.AddTool(server, &mcp.Tool{
		Name:        "set_forecast",
		Title:       "Set forecast",
		Description: "Create or replace the weather forecast for a city.",
		Annotations: hints("Set forecast", false, false, true, false),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in setForecastInput) (*mcp.CallToolResult, Forecast, error) {
		if strings.TrimSpace(in.City) == "" || strings.TrimSpace(in.Summary) == "" {
			return nil, Forecast{}, errors.New("city and summary must not be empty")
		}
		if in.TemperatureC < -90 || in.TemperatureC > 60 {
			return nil, Forecast{}, fmt.Errorf("temperature_c %g is not a plausible temperature; use a value from -90 to 60", in.TemperatureC)
		}
		f, created := s.set(Forecast{City: in.City, Summary: strings.TrimSpace(in.Summary), TemperatureC: in.TemperatureC})
		verb := "Updated"
		if created {
			verb = "Created"
		}
		return text("%s the forecast for %s: %s, %s.", verb, f.City, f.Summary, celsius(f.TemperatureC)), f, nil
	})

	mcp.AddTool(server, &mcp.Tool{
		Name:        "delete_forecast",
		Title:       "Delete forecast",
		Description: "Delete the weather forecast of a city. The forecast cannot be recovered.",
		Annotations: hints("Delete forecast", false, true, true, false),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in cityInput) (*mcp.CallToolResult, any, error) {
		f, ok := s.delete(in.City)
		if !ok {
			return nil, nil, unknownCity(s, in.City)
		}
		return text("Deleted the forecast for %s.", f.City), nil, nil
	})

	mcp.AddTool(server, &mcp.Tool{
		Name:        "send_alert",
		Title:       "Send weather alert",
		Description: "Send a weather alert to the people subscribed to a city. People are notified immediately.",
		Annotations: hints("Send weather alert", false, false, false, true),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in sendAlertInput) (*mcp.CallToolResult, any, error) {
		if strings.TrimSpace(in.City) == "" || strings.TrimSpace(in.Message) == "" {
			return nil, nil, errors.New("city and message must not be empty")
		}
		a := s.sendAlert(in.City, in.Message)
		return text("Sent a weather alert for %s: %q.", a.City, a.Message), nil, nil
	})

	mcp.AddTool(server, &mcp.Tool{
		Name:        "reset_forecasts",
		Title:       "Delete all forecasts",
		Description: "Delete the weather forecasts of every city. They cannot be recovered.",
		Annotations: hints("Delete all forecasts", false, true, true, false),
	}, func(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
		return text("Deleted all forecasts (%d cities).", s.deleteAll()), nil, nil
	})
}

// unknownCity is a tool error (IsError result) that tells the model which
// cities exist, so it can correct itself.
func unknownCity(s *store, city string) error {
	known := s.cities()
	if len(known) == 0 {
		return fmt.Errorf("there is no forecast for %q: there are no forecasts at all", city)
	}
	return fmt.Errorf("there is no forecast for %q; known cities: %s", city, strings.Join(known, ", "))
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func celsius(t float64) string { return fmt.Sprintf("%g°C", t) }
