package structs

// NodeMetaApplyRequest changes a node's dynamic metadata (POST
// /v1/client/metadata, `nomad node meta apply`): a key with a value sets
// it, a key with null unsets it, a config key included.
type NodeMetaApplyRequest struct {
	NodeID string
	Meta   map[string]*string
}

// NodeMetaResponse is a node's metadata as its client holds it: Meta is
// what the node registers with, Static the config's meta block, Dynamic
// what was applied since (null values are unset keys).
type NodeMetaResponse struct {
	Meta    map[string]string
	Dynamic map[string]*string
	Static  map[string]string
}
