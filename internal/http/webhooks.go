package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolgate/toolgate/internal/apperr"
	"github.com/toolgate/toolgate/internal/webhook"
)

// errNoWebhooks answers the webhook routes of a server built without them.
var errNoWebhooks = apperr.NotFoundf("not_found", "webhooks are not available on this server")

func (s *Server) listWebhooks(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	ws, err := s.webhooks.List(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": ws})
}

func (s *Server) createWebhook(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	var in webhook.Input
	if err := s.decode(c, &in); err != nil {
		return err
	}
	w, err := s.webhooks.Create(c.Request().Context(), in)
	if err != nil {
		return err
	}
	// The secret is in this answer only.
	return c.JSON(http.StatusCreated, struct {
		webhook.Webhook
		Secret string `json:"secret"`
	}{w, w.Secret})
}

func (s *Server) getWebhook(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	w, err := s.webhooks.Get(c.Request().Context(), c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

func (s *Server) updateWebhook(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	var in webhook.Input
	if err := s.decode(c, &in); err != nil {
		return err
	}
	w, err := s.webhooks.Update(c.Request().Context(), c.Param("webhookId"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

func (s *Server) deleteWebhook(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	if err := s.webhooks.Delete(c.Request().Context(), c.Param("webhookId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) testWebhook(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	d, err := s.webhooks.Test(c.Request().Context(), c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, d)
}

func (s *Server) webhookDeliveries(c echo.Context) error {
	if s.webhooks == nil {
		return errNoWebhooks
	}
	ds, err := s.webhooks.Deliveries(c.Request().Context(), c.Param("webhookId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": ds})
}
