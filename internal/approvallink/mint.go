package approvallink

import (
	"context"
	"net/url"
	"strings"
	"time"
)

// PagePath is the web app's page a link opens: PagePath + the request's id
// + "#" + the token. The token is in the fragment, which browsers never
// send: it stays out of every server's and proxy's access log; the page
// POSTs it.
const PagePath = "/link/"

// Minter makes the links of approval.required deliveries (the webhook
// dispatcher's webhook.LinkMinter).
type Minter struct {
	Key   Key
	Store Store
}

// DecisionLinks returns the approve and deny links of one delivery of the
// request, under base (PUBLIC_URL), storing their hashes; a retry of the
// delivery gets the same links. Both are "" when the request is gone.
func (m *Minter) DecisionLinks(ctx context.Context, base, deliveryID, requestID string, expiresAt *time.Time) (approveURL, denyURL string, err error) {
	tokens := map[string]string{Approve: m.Key.token(deliveryID, requestID, Approve), Deny: m.Key.token(deliveryID, requestID, Deny)}
	links := make([]NewLink, 0, 2)
	for _, d := range []string{Approve, Deny} {
		h := hash(tokens[d])
		links = append(links, NewLink{Hash: h, ID: linkID(h), ApprovalRequestID: requestID, Decision: d, DeliveryID: deliveryID, ExpiresAt: expiresAt})
	}
	ok, err := m.Store.Create(ctx, links)
	if err != nil || !ok {
		return "", "", err
	}
	return PageURL(base, requestID, tokens[Approve]), PageURL(base, requestID, tokens[Deny]), nil
}

// PageURL is the link to the page that decides request id with token.
func PageURL(base, id, token string) string {
	return strings.TrimRight(base, "/") + PagePath + url.PathEscape(id) + "#" + token
}
