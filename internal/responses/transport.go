package responses

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// Transport sizes the connection pool to the provider. openai-go's default
// (http.DefaultClient) keeps 2 idle connections per host, so under
// concurrency nearly every request dialled (and, against the real API,
// shook hands over TLS) again.
type Transport struct {
	// MaxIdleConnsPerHost is how many kept-alive connections wait for the
	// next request (UPSTREAM_MAX_IDLE_CONNS); <= 0 is 256.
	MaxIdleConnsPerHost int
	// MaxConnsPerHost caps the connections to the provider
	// (UPSTREAM_MAX_CONNS_PER_HOST); 0 is no cap. Streams past the cap wait
	// for a connection (HTTP/1.1) or share one (HTTP/2).
	MaxConnsPerHost int
	// IdleConnTimeout closes a connection idle for that long
	// (UPSTREAM_IDLE_CONN_TIMEOUT); 0 is 90s.
	IdleConnTimeout time.Duration
	// TLSClientConfig is nil in production (the system roots); tests trust
	// their own server's certificate with it.
	TLSClientConfig *tls.Config
}

// Dial and handshake bounds: a provider that does not accept or finish a TLS
// handshake within them is unreachable, and the first-byte timeout (which
// covers them too) would otherwise be the only bound.
const (
	dialTimeout         = 10 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	defaultIdleConns    = 256
	defaultIdleConnTime = 90 * time.Second
	writeBufferSize     = 1 << 10
)

// NewHTTPClient returns the client the Responses API is called with: keep-
// alive, HTTP/2 where the provider offers it over TLS (api.openai.com does),
// the proxy from the environment (HTTPS_PROXY, NO_PROXY) as openai-go's
// default did, and no overall timeout (streams last as long as their turn;
// the watchdog bounds the first byte and the gaps).
func NewHTTPClient(t Transport) *http.Client {
	idle := t.MaxIdleConnsPerHost
	if idle <= 0 {
		idle = defaultIdleConns
	}
	idleTime := t.IdleConnTimeout
	if idleTime <= 0 {
		idleTime = defaultIdleConnTime
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       t.TLSClientConfig,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		MaxConnsPerHost:       max(t.MaxConnsPerHost, 0),
		IdleConnTimeout:       idleTime,
		ExpectContinueTimeout: time.Second,
		// An HTTP/1.1 connection keeps its write buffer for life (4 KiB by
		// default), one per stream in flight: headers fit in 1 KiB, and a
		// bigger body is written past the buffer.
		WriteBufferSize: writeBufferSize,
	}
	return &http.Client{Transport: tr}
}
