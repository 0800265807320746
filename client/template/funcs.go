package template

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// helpers are the string and encoding functions upstream's templates
// offer beside the data functions, under upstream's names.
var helpers = map[string]any{
	"toJSON": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"toJSONPretty": func(v any) (string, error) {
		b, err := json.MarshalIndent(v, "", "  ")
		return string(b), err
	},
	"parseJSON": func(s string) (any, error) {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("parseJSON: %w", err)
		}
		return v, nil
	},
	"split":      func(sep, s string) []string { return strings.Split(s, sep) },
	"join":       func(sep string, parts []string) string { return strings.Join(parts, sep) },
	"toLower":    strings.ToLower,
	"toUpper":    strings.ToUpper,
	"toTitle":    strings.ToTitle,
	"trimSpace":  strings.TrimSpace,
	"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
	"replaceAll": func(from, to, s string) string { return strings.ReplaceAll(s, from, to) },
	"base64Encode": func(s string) string {
		return base64.StdEncoding.EncodeToString([]byte(s))
	},
	"base64Decode": func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("base64Decode: %w", err)
		}
		return string(b), nil
	},
	"base64URLEncode": func(s string) string {
		return base64.URLEncoding.EncodeToString([]byte(s))
	},
	"base64URLDecode": func(s string) (string, error) {
		b, err := base64.URLEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("base64URLDecode: %w", err)
		}
		return string(b), nil
	},
}

// refused are upstream's Consul and Vault functions: there is no Consul
// or Vault integration, and a template that calls one fails naming it.
var refused = []string{
	"key", "keyExists", "keyOrDefault", "ls", "safeLs", "tree", "safeTree",
	"service", "services", "connect", "caLeaf", "caRoots", "node", "nodes",
	"datacenters", "checks", "secret", "secrets", "pkiCert",
}

// ErrRefusedFunc is a template calling a Consul or Vault function.
var ErrRefusedFunc = fmt.Errorf("not supported: there is no Consul or Vault integration")

func refusedFunc(name string) func(...any) (string, error) {
	return func(...any) (string, error) {
		return "", fmt.Errorf("function %q is %w", name, ErrRefusedFunc)
	}
}

// ErrDeniedFunc is a template calling a function the client's
// function_denylist forbids.
var ErrDeniedFunc = fmt.Errorf("denied by this client's template function_denylist")

func deniedFunc(name string) func(...any) (string, error) {
	return func(...any) (string, error) {
		return "", fmt.Errorf("function %q is %w", name, ErrDeniedFunc)
	}
}
