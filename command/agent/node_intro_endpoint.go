package agent

import (
	"fmt"
	"net/http"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// clientIntroBody is the body of POST
// /v1/acl/identity/client-introduction-token, upstream's: TTL is a
// duration string ("15m").
type clientIntroBody struct {
	NodeName string
	NodePool string
	TTL      string
}

// clientIntroductionToken is POST /v1/acl/identity/client-introduction-token.
func (s *HTTPServer) clientIntroductionToken(w http.ResponseWriter, r *http.Request) (any, error) {
	var body clientIntroBody
	if err := decodeOptionalBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.ClientIntroductionTokenRequest{NodeName: body.NodeName, NodePool: body.NodePool, WriteRequest: writeRequest(r)}
	if body.TTL != "" {
		d, err := time.ParseDuration(body.TTL)
		if err != nil {
			return nil, fmt.Errorf("%w: TTL %q is not a duration (e.g. \"15m\")", structs.ErrInvalidRequest, body.TTL)
		}
		args.TTL = d
	}
	var reply structs.ClientIntroductionTokenResponse
	if err := s.call(r, "ACL.CreateClientIntroductionToken", args, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}
