package api

// ACLIdentity is the /v1/acl/identity API (upstream 1.11).
type ACLIdentity struct{ client *Client }

// ACLIdentity returns the ACL identity API.
func (c *Client) ACLIdentity() *ACLIdentity { return &ACLIdentity{client: c} }

// ACLIdentityClientIntroductionTokenRequest asks for a client introduction
// token: scoped to NodePool ("default" when empty) and, when set, to
// NodeName; TTL ("15m") defaults to the server's default_identity_ttl.
type ACLIdentityClientIntroductionTokenRequest struct {
	NodeName string `json:",omitempty"`
	NodePool string `json:",omitempty"`
	TTL      string `json:",omitempty"`
}

// ACLIdentityClientIntroductionTokenResponse carries the signed token.
type ACLIdentityClientIntroductionTokenResponse struct {
	JWT string
}

// CreateClientIntroductionToken signs a client introduction token
// (POST /v1/acl/identity/client-introduction-token); it needs node:write.
func (a *ACLIdentity) CreateClientIntroductionToken(req *ACLIdentityClientIntroductionTokenRequest, w *WriteOptions) (*ACLIdentityClientIntroductionTokenResponse, *WriteMeta, error) {
	var out ACLIdentityClientIntroductionTokenResponse
	wm, err := a.client.write("POST", "/v1/acl/identity/client-introduction-token", req, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
