package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
)

// Websocket opens a websocket to path (with its query), with the client's
// TLS settings and token, as `nomad alloc exec` needs. An agent that
// refuses the upgrade is an error carrying its status and message.
func (c *Client) Websocket(ctx context.Context, path string) (*websocket.Conn, error) {
	u, err := c.RawURL(path)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	d := websocket.Dialer{Proxy: http.ProxyFromEnvironment}
	if t, ok := c.httpClient.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
		d.TLSClientConfig = t.TLSClientConfig.Clone()
	}
	h := http.Header{}
	if c.secretID != "" {
		h.Set(HeaderToken, c.secretID)
	}
	conn, resp, err := d.DialContext(ctx, u.String(), h)
	if err != nil && resp != nil {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		//lint:ignore ST1005 upstream's text, which callers match on
		return nil, fmt.Errorf("Unexpected response code: %d (%s)", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return conn, err
}
