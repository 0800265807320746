package structs

import (
	"fmt"
	"time"
)

// Client introduction enforcement modes (server.client_introduction's
// enforcement, upstream's values).
const (
	// IntroEnforcementStrict refuses the registration of a new node
	// without a valid introduction token.
	IntroEnforcementStrict = "strict"
	// IntroEnforcementWarn registers it and logs a warning.
	IntroEnforcementWarn = "warn"
	// IntroEnforcementNone registers it silently.
	IntroEnforcementNone = "none"
)

// ErrIntroductionRequired refuses a new node without a valid introduction
// token while enforcement is strict.
var ErrIntroductionRequired = fmt.Errorf("%w: a new node must present a client introduction token (nomad node intro create)", ErrPermissionDenied)

// IntroSubjectPrefix starts the subject of every introduction token, so
// that no workload identity can pass for one.
const IntroSubjectPrefix = "node-introduction:"

// ClientIntroductionConfig is the server's client_introduction block.
type ClientIntroductionConfig struct {
	// Enforcement is strict, warn or none.
	Enforcement string
	// DefaultTTL is a token's lifetime when its request names none;
	// MaxTTL the longest a request may ask for.
	DefaultTTL time.Duration
	MaxTTL     time.Duration
}

// DefaultClientIntroductionConfig is upstream's: warn, tokens of five
// minutes by default and at most thirty.
func DefaultClientIntroductionConfig() ClientIntroductionConfig {
	return ClientIntroductionConfig{Enforcement: IntroEnforcementWarn, DefaultTTL: 5 * time.Minute, MaxTTL: 30 * time.Minute}
}

// Validate names what is wrong with the block's values.
func (c ClientIntroductionConfig) Validate() error {
	switch c.Enforcement {
	case IntroEnforcementStrict, IntroEnforcementWarn, IntroEnforcementNone:
	default:
		return fmt.Errorf("server.client_introduction.enforcement must be %q, %q or %q, not %q",
			IntroEnforcementStrict, IntroEnforcementWarn, IntroEnforcementNone, c.Enforcement)
	}
	if c.DefaultTTL <= 0 || c.MaxTTL <= 0 || c.DefaultTTL > c.MaxTTL {
		return fmt.Errorf("server.client_introduction: default_identity_ttl (%s) and max_identity_ttl (%s) must be positive, the default no longer than the max", c.DefaultTTL, c.MaxTTL)
	}
	return nil
}

// ClientIntroductionTokenRequest asks for a client introduction token
// (POST /v1/acl/identity/client-introduction-token, upstream's shape).
type ClientIntroductionTokenRequest struct {
	// NodeName, when set, is the only node name the token introduces.
	NodeName string
	// NodePool is the pool the node must join; "default" when empty.
	NodePool string
	// TTL is the token's lifetime; the server's default when zero.
	TTL time.Duration
	WriteRequest
}

// ClientIntroductionTokenResponse carries the signed token.
type ClientIntroductionTokenResponse struct {
	JWT string
}
