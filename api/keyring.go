package api

import (
	"net/http"
	"net/url"
)

// Keyring reaches /v1/operator/keyring.
type Keyring struct {
	client *Client
}

// Keyring returns a handle on the keyring endpoints.
func (c *Client) Keyring() *Keyring { return &Keyring{client: c} }

// RootKeyMeta is a root key's metadata (never the key).
type RootKeyMeta struct {
	KeyID       string
	Algorithm   string
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
	State       string
	PublishTime int64
}

// KeyringRotateOptions tune a rotation: Full re-encrypts every variable.
type KeyringRotateOptions struct {
	Full      bool
	Algorithm string
}

// List lists the root keys.
func (k *Keyring) List(q *QueryOptions) ([]*RootKeyMeta, *QueryMeta, error) {
	var out []*RootKeyMeta
	qm, err := k.client.query("/v1/operator/keyring/keys", &out, q)
	return out, qm, err
}

// Rotate makes a new active root key.
func (k *Keyring) Rotate(opts *KeyringRotateOptions, w *WriteOptions) (*RootKeyMeta, *WriteMeta, error) {
	qp := url.Values{}
	if opts != nil {
		if opts.Algorithm != "" {
			qp.Set("algo", opts.Algorithm)
		}
		if opts.Full {
			qp.Set("full", "true")
		}
	}
	var out struct{ Key *RootKeyMeta }
	path := "/v1/operator/keyring/rotate"
	if len(qp) > 0 {
		path += "?" + qp.Encode()
	}
	wm, err := k.client.write(http.MethodPut, path, nil, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return out.Key, wm, nil
}

// Delete removes a root key that is neither active nor still encrypting
// a variable.
func (k *Keyring) Delete(keyID string, w *WriteOptions) (*WriteMeta, error) {
	return k.client.write(http.MethodDelete, "/v1/operator/keyring/key/"+url.PathEscape(keyID), nil, nil, w)
}
