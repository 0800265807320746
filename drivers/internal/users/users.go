// Package users is who a host-process driver's task runs as: the task's
// `user` looked up in the host's user database, and the plugin options
// `denied_host_uids` and `denied_host_gids` that keep tasks off ids the
// operator reserved (root, system accounts).
package users

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/drivers"
)

// Credential is who a task runs as.
type Credential struct {
	UID, GID int
	// Groups are the user's supplementary groups.
	Groups []int
}

// Lookup finds name in the host's user database, with its groups.
func Lookup(name string) (Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Credential{}, fmt.Errorf("task user %q: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return Credential{}, fmt.Errorf("task user %q: %w", name, err)
	}
	c := Credential{UID: uid, GID: gid}
	ids, _ := u.GroupIds()
	for _, g := range ids {
		if n, err := strconv.Atoi(g); err == nil {
			c.Groups = append(c.Groups, n)
		}
	}
	return c, nil
}

// Ranges is a set of ids written as upstream's plugin options are:
// "0-100,200" (inclusive ranges and single ids, comma separated).
type Ranges []idRange

type idRange struct{ lo, hi int }

// ParseRanges parses s; empty is the empty set.
func ParseRanges(s string) (Ranges, error) {
	var out Ranges
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		loS, hiS, isRange := strings.Cut(part, "-")
		lo, err := parseID(loS)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseID(hiS); err != nil {
				return nil, fmt.Errorf("%q: %w", part, err)
			}
		}
		if hi < lo {
			return nil, fmt.Errorf("%q: the range ends before it starts", part)
		}
		out = append(out, idRange{lo, hi})
	}
	return out, nil
}

func parseID(s string) (int, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want a non-negative id, got %q", s)
	}
	return int(n), nil
}

// Contains reports whether id is in the set.
func (r Ranges) Contains(id int) bool {
	for _, x := range r {
		if id >= x.lo && id <= x.hi {
			return true
		}
	}
	return false
}

// ErrDenied is the cause when a task's user has an id the plugin denies.
var ErrDenied = errors.New("denied by the plugin config")

// Policy is a plugin's denied ids.
type Policy struct {
	DeniedUIDs, DeniedGIDs Ranges
}

// Check refuses a credential whose uid, primary gid or any of its groups
// the policy denies. name is the task's `user`, for the message.
func (p Policy) Check(name string, c Credential) error {
	if p.DeniedUIDs.Contains(c.UID) {
		return fmt.Errorf("task user %q: uid %d: %w (denied_host_uids)", name, c.UID, ErrDenied)
	}
	for _, g := range append([]int{c.GID}, c.Groups...) {
		if p.DeniedGIDs.Contains(g) {
			return fmt.Errorf("task user %q: gid %d: %w (denied_host_gids)", name, g, ErrDenied)
		}
	}
	return nil
}

// DecodePolicy reads the plugin options denied_host_uids and
// denied_host_gids from dec; a malformed one fails dec with its key.
func DecodePolicy(dec *drivers.ConfigDecoder) Policy {
	var p Policy
	for key, dst := range map[string]*Ranges{"denied_host_uids": &p.DeniedUIDs, "denied_host_gids": &p.DeniedGIDs} {
		r, err := ParseRanges(dec.String(key))
		if err != nil {
			dec.Fail(key, err)
			continue
		}
		*dst = r
	}
	return p
}
