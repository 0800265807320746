package drivers

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ConfigDecoder reads typed values out of a loosely typed config block: a
// task's `config` or a driver's agent `plugin { config { ... } }`.
//
// The block reaches a driver through JSON (numbers become float64 or
// json.Number), msgpack (int64, uint64, []byte strings) or HCL (strings where
// a number was quoted), so each reader accepts every encoding of its type and
// rejects anything lossy, with an error naming the key.
//
// Use it like bufio.Scanner: read every key, then check Err once. Err also
// reports every key nobody read, so a misspelt or unimplemented option is an
// error instead of being ignored.
//
//	d := drivers.NewConfigDecoder(cfg.Config)
//	cmd := d.RequiredString("command")
//	args := d.StringSlice("args")
//	if err := d.Err(); err != nil { ... }
type ConfigDecoder struct {
	m    map[string]any
	seen map[string]bool
	errs []error
}

// NewConfigDecoder returns a decoder over m, which may be nil.
func NewConfigDecoder(m map[string]any) *ConfigDecoder {
	return &ConfigDecoder{m: m, seen: make(map[string]bool, len(m))}
}

// Err returns every problem found so far, plus one ErrUnknownKey error per key
// that was present but never read, in key order. Each problem is a
// *ConfigError; errors.As yields the first.
func (d *ConfigDecoder) Err() error {
	errs := slices.Clone(d.errs)
	var unknown []string
	for k := range d.m {
		if !d.seen[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		errs = append(errs, &ConfigError{Key: k, Err: ErrUnknownKey})
	}
	return errors.Join(errs...)
}

// lookup marks key as read and returns its value; a nil value counts as absent
// because encoders write explicit nulls for unset optional fields.
func (d *ConfigDecoder) lookup(key string) (any, bool) {
	d.seen[key] = true
	v, ok := d.m[key]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func (d *ConfigDecoder) fail(key string, err error) {
	d.errs = append(d.errs, &ConfigError{Key: key, Err: err})
}

// Has reports whether key is present with a non-nil value, without marking it
// read.
func (d *ConfigDecoder) Has(key string) bool {
	v, ok := d.m[key]
	return ok && v != nil
}

// String returns key as a string, or "" when absent. Numbers and booleans are
// converted, as HCL would for a string attribute.
func (d *ConfigDecoder) String(key string) string {
	v, ok := d.lookup(key)
	if !ok {
		return ""
	}
	s, err := toString(v)
	if err != nil {
		d.fail(key, err)
	}
	return s
}

// RequiredString is String for a key that must be present and non-empty.
func (d *ConfigDecoder) RequiredString(key string) string {
	before := len(d.errs)
	s := d.String(key)
	if s == "" && len(d.errs) == before {
		d.fail(key, ErrMissingKey)
	}
	return s
}

// StringSlice returns key as a list of strings, or nil when absent. A single
// string is not promoted to a list: `args = "-x"` is almost always a mistake
// for `args = ["-x"]`, and splitting it would guess at quoting.
func (d *ConfigDecoder) StringSlice(key string) []string {
	v, ok := d.lookup(key)
	if !ok {
		return nil
	}
	switch l := v.(type) {
	case []string:
		return slices.Clone(l)
	case []any:
		out := make([]string, 0, len(l))
		for i, e := range l {
			s, err := toString(e)
			if err != nil {
				d.fail(key, fmt.Errorf("element %d: %w", i, err))
				return nil
			}
			out = append(out, s)
		}
		return out
	default:
		d.fail(key, fmt.Errorf("want a list of strings, got %T", v))
		return nil
	}
}

// Int returns key as an int, or 0 when absent. Floats must be integral and
// strings must parse as base-10 integers.
func (d *ConfigDecoder) Int(key string) int {
	v, ok := d.lookup(key)
	if !ok {
		return 0
	}
	n, err := toInt(v)
	if err != nil {
		d.fail(key, err)
	}
	return n
}

// Bool returns key as a bool, or false when absent. Strings are parsed with
// strconv.ParseBool ("true", "1", ...).
func (d *ConfigDecoder) Bool(key string) bool {
	v, ok := d.lookup(key)
	if !ok {
		return false
	}
	switch b := v.(type) {
	case bool:
		return b
	case string:
		p, err := strconv.ParseBool(strings.TrimSpace(b))
		if err != nil {
			d.fail(key, fmt.Errorf("want a bool, got %q", b))
		}
		return p
	case []byte:
		p, err := strconv.ParseBool(strings.TrimSpace(string(b)))
		if err != nil {
			d.fail(key, fmt.Errorf("want a bool, got %q", b))
		}
		return p
	default:
		d.fail(key, fmt.Errorf("want a bool, got %T", v))
		return false
	}
}

// Duration returns key as a non-negative duration, or 0 when absent. Strings
// use time.ParseDuration ("1h30s"); a bare number is nanoseconds, which is how
// a time.Duration field comes out of JSON or msgpack.
func (d *ConfigDecoder) Duration(key string) time.Duration {
	v, ok := d.lookup(key)
	if !ok {
		return 0
	}
	var dur time.Duration
	switch s := v.(type) {
	case time.Duration:
		dur = s
	case string, []byte:
		str, _ := toString(s)
		str = strings.TrimSpace(str)
		if str == "" {
			return 0
		}
		p, err := time.ParseDuration(str)
		if err != nil {
			d.fail(key, fmt.Errorf("want a duration such as \"10s\": %w", err))
			return 0
		}
		dur = p
	default:
		n, err := toInt64(v)
		if err != nil {
			d.fail(key, fmt.Errorf("want a duration such as \"10s\", got %T", v))
			return 0
		}
		dur = time.Duration(n)
	}
	if dur < 0 {
		d.fail(key, fmt.Errorf("duration %s is negative", dur))
		return 0
	}
	return dur
}

func toString(v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case []byte: // msgpack without RawToString
		return string(s), nil
	case bool:
		return strconv.FormatBool(s), nil
	case json.Number:
		return s.String(), nil
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(s), 'f', -1, 32), nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(s), nil
	default:
		return "", fmt.Errorf("want a string, got %T", v)
	}
}

func toInt(v any) (int, error) {
	n, err := toInt64(v)
	if err != nil {
		return 0, err
	}
	if n < math.MinInt || n > math.MaxInt {
		return 0, fmt.Errorf("%d overflows int", n)
	}
	return int(n), nil
}

func toInt64(v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int8:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint:
		return uintToInt64(uint64(n))
	case uint8:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint64:
		return uintToInt64(n)
	case float32:
		return floatToInt64(float64(n))
	case float64:
		return floatToInt64(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		f, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("want an integer, got %q", n.String())
		}
		return floatToInt64(f)
	case string:
		return parseIntString(n)
	case []byte:
		return parseIntString(string(n))
	default:
		return 0, fmt.Errorf("want an integer, got %T", v)
	}
}

func parseIntString(s string) (int64, error) {
	i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %q", s)
	}
	return i, nil
}

func uintToInt64(u uint64) (int64, error) {
	if u > math.MaxInt64 {
		return 0, fmt.Errorf("%d overflows int64", u)
	}
	return int64(u), nil
}

func floatToInt64(f float64) (int64, error) {
	// 2^63 is exactly representable; anything at or above it overflows.
	if f != math.Trunc(f) || math.IsInf(f, 0) || f >= 1<<63 || f < -(1<<63) {
		return 0, fmt.Errorf("want an integer, got %v", f)
	}
	return int64(f), nil
}

// Raw returns key's value as decoded and marks it read, for keys holding
// blocks or maps that the typed readers do not cover. Nil counts as absent.
func (d *ConfigDecoder) Raw(key string) (any, bool) { return d.lookup(key) }

// Fail records a problem with key found by the caller's own checks, so that
// Err reports it beside the decoder's.
func (d *ConfigDecoder) Fail(key string, err error) { d.fail(key, err) }
