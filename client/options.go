package client

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/client/allocrunner"
)

// Upstream's defaults for the user options: tasks of the drivers that
// run as a chosen user may not run as root (or Windows' Administrator).
const (
	DefaultUserDenylist       = "root,Administrator"
	DefaultUserCheckedDrivers = "exec,qemu,java"
)

// Options is the client's `options` block, decoded: upstream's
// "namespace.option" keys that this version honours.
type Options struct {
	// DriverAllowlist, when not empty, is the only drivers the client
	// builds, fingerprints and offers; DriverDenylist are never built.
	DriverAllowlist []string
	DriverDenylist  []string
	// Users is user.denylist over user.checked_drivers.
	Users allocrunner.UserPolicy
}

// optionKeys are the keys ParseOptions reads, with their deprecated
// upstream spellings, which mean the same.
var optionKeys = map[string][]string{
	"driver.allowlist":     {"driver.whitelist"},
	"driver.denylist":      {"driver.blacklist"},
	"user.denylist":        {"user.blacklist"},
	"user.checked_drivers": nil,
}

// unsupportedOptions are upstream's option keys this version cannot
// honour: refused by name, with what to do instead where there is a way.
var unsupportedOptions = map[string]string{
	"driver.raw_exec.enable":                  `use plugin "raw_exec" { config { enabled = true } }`,
	"driver.exec.enable":                      `exec is enabled wherever it can run`,
	"env.denylist":                            "",
	"env.blacklist":                           "",
	"fingerprint.allowlist":                   "",
	"fingerprint.whitelist":                   "",
	"fingerprint.denylist":                    "",
	"fingerprint.blacklist":                   "",
	"fingerprint.network.disallow_link_local": "",
}

// ErrUnknownOption is wrapped by ParseOptions' errors for an option key
// this version does not read.
var ErrUnknownOption = errors.New("unknown client option")

// unknownOptionError is ErrUnknownOption with its message.
type unknownOptionError struct{ msg string }

func (e *unknownOptionError) Error() string        { return e.msg }
func (e *unknownOptionError) Is(target error) bool { return target == ErrUnknownOption }

// OptionKeys returns the option keys ParseOptions reads (deprecated
// spellings included), sorted.
func OptionKeys() []string {
	var out []string
	for k, aliases := range optionKeys {
		out = append(out, k)
		out = append(out, aliases...)
	}
	slices.Sort(out)
	return out
}

// ParseOptions decodes the client's options. Every key must be one it
// reads: an unknown one, or an upstream one this version cannot honour, is
// an error naming it, so that a setting is never accepted without effect.
// drivers are the driver names the client knows, against which the driver
// lists are checked.
func ParseOptions(opts map[string]string, drivers []string) (Options, error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if _, ok := optionKeys[k]; ok || isAlias(k) {
			continue
		}
		if hint, ok := unsupportedOptions[k]; ok {
			msg := fmt.Sprintf("client.options: %q is not supported by this version", k)
			if hint != "" {
				msg += "; " + hint
			}
			errs = append(errs, &unknownOptionError{msg})
			continue
		}
		errs = append(errs, &unknownOptionError{fmt.Sprintf("client.options: unknown option %q (this version reads %s)", k, strings.Join(OptionKeys(), ", "))})
	}
	read := func(key, def string) (map[string]bool, bool) {
		v, ok := opts[key]
		for _, alias := range optionKeys[key] {
			if a, set := opts[alias]; set && !ok {
				v, ok = a, true
			}
		}
		if !ok {
			v = def
		}
		return listSet(v), ok
	}
	var out Options
	for _, l := range []struct {
		key string
		dst *[]string
	}{{"driver.allowlist", &out.DriverAllowlist}, {"driver.denylist", &out.DriverDenylist}} {
		set, _ := read(l.key, "")
		for _, name := range slices.Sorted(maps.Keys(set)) {
			if !slices.Contains(drivers, name) {
				errs = append(errs, fmt.Errorf("client.options: %s names driver %q, which does not exist (known: %s)", l.key, name, strings.Join(drivers, ", ")))
				continue
			}
			*l.dst = append(*l.dst, name)
		}
	}
	out.Users.Denylist, _ = read("user.denylist", DefaultUserDenylist)
	out.Users.CheckedDrivers, _ = read("user.checked_drivers", DefaultUserCheckedDrivers)
	return out, errors.Join(errs...)
}

func isAlias(k string) bool {
	for _, aliases := range optionKeys {
		if slices.Contains(aliases, k) {
			return true
		}
	}
	return false
}

// listSet splits a comma-separated option value into a set, trimming
// spaces and dropping empty entries.
func listSet(v string) map[string]bool {
	out := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out[s] = true
		}
	}
	return out
}

// offers reports whether the options let the client build the driver.
func (o Options) offers(driver string) bool {
	if len(o.DriverAllowlist) > 0 && !slices.Contains(o.DriverAllowlist, driver) {
		return false
	}
	return !slices.Contains(o.DriverDenylist, driver)
}
