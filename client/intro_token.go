package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// IntroTokenFile is where, under the state dir, a client looks for its
// introduction token when none is configured (upstream's file name).
const IntroTokenFile = "intro_token.jwt"

// introToken is the introduction token to present when registering: the
// configured one, or the file's. A node the servers already know needs
// none (its secret proves it), and the servers ignore it then.
func (c *Client) introToken() string {
	return readIntroToken(c.cfg.IntroToken, c.cfg.StateDir, c.logger)
}

// readIntroToken is the configured token, or else stateDir's
// IntroTokenFile, or "".
func readIntroToken(configured, stateDir string, logger hclog.Logger) string {
	if configured != "" {
		return configured
	}
	if stateDir == "" {
		return ""
	}
	path := filepath.Join(stateDir, IntroTokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			logger.Error("cannot read the client introduction token", "path", path, "error", err)
		}
		return ""
	}
	return strings.TrimSpace(string(b))
}
