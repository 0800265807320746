package drivers

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestConfigDecoder_Int checks that every encoding a number can arrive in
// (JSON, msgpack, HCL strings) decodes, and that lossy ones are refused
// with the key named, because a silently truncated exit code or count is a
// wrong test or a wrong workload.
func TestConfigDecoder_Int(t *testing.T) {
	for _, v := range []any{
		3, int8(3), int32(3), int64(3), uint(3), uint8(3), uint64(3),
		float32(3), float64(3), json.Number("3"), json.Number("3.0"), "3", " 3 ", []byte("3"),
	} {
		d := NewConfigDecoder(map[string]any{"n": v})
		must.Eq(t, 3, d.Int("n"), must.Sprintf("%T", v))
		must.NoError(t, d.Err())
	}
	for _, v := range []any{
		1.5, "three", "3.0", uint64(math.MaxUint64), math.Inf(1), float64(1 << 63), true, []any{1},
	} {
		d := NewConfigDecoder(map[string]any{"n": v})
		must.Zero(t, d.Int("n"))
		var ce *ConfigError
		must.ErrorAs[*ConfigError](t, d.Err(), &ce, must.Sprintf("%T %v", v, v))
		must.Eq(t, "n", ce.Key)
		must.ErrorIs(t, d.Err(), ErrInvalidConfig)
	}
}

// TestConfigDecoder_Types covers strings, lists, bools and durations, and the
// absent and explicit-null cases that encoders produce for unset fields.
func TestConfigDecoder_Types(t *testing.T) {
	d := NewConfigDecoder(map[string]any{
		"s":       "x",
		"snum":    float64(2.5),
		"b":       "true",
		"bb":      false,
		"l":       []any{"a", int64(1), true},
		"ls":      []string{"z"},
		"dur":     "1m30s",
		"durns":   int64(time.Second),
		"empty":   "",
		"nullval": nil,
	})
	must.Eq(t, "x", d.String("s"))
	must.Eq(t, "2.5", d.String("snum"))
	must.True(t, d.Bool("b"))
	must.False(t, d.Bool("bb"))
	must.Eq(t, []string{"a", "1", "true"}, d.StringSlice("l"))
	must.Eq(t, []string{"z"}, d.StringSlice("ls"))
	must.Eq(t, 90*time.Second, d.Duration("dur"))
	must.Eq(t, time.Second, d.Duration("durns"))
	must.Zero(t, d.Duration("empty"))
	must.Eq(t, "", d.String("nullval"))
	must.Nil(t, d.StringSlice("absent"))
	must.False(t, d.Has("nullval"))
	must.True(t, d.Has("s"))
	must.NoError(t, d.Err())
}

// TestConfigDecoder_Errors checks that each bad key is reported, named, and
// that keys nobody read are reported as unknown, in a stable order.
func TestConfigDecoder_Errors(t *testing.T) {
	d := NewConfigDecoder(map[string]any{
		"cmd":   42.5,
		"args":  "-x",
		"wait":  "-5s",
		"flag":  "yes please",
		"zeta":  1,
		"alpha": 1,
	})
	d.String("cmd") // numbers are fine as strings
	d.StringSlice("args")
	d.Duration("wait")
	d.Bool("flag")
	d.RequiredString("command")
	err := d.Err()

	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		must.True(t, errors.As(e, &ce))
		keys = append(keys, ce.Key)
	}
	must.Eq(t, []string{"args", "wait", "flag", "command", "alpha", "zeta"}, keys)
	must.ErrorIs(t, err, ErrMissingKey)
	must.ErrorIs(t, err, ErrUnknownKey)
	must.StrContains(t, err.Error(), `config "command": required key is missing`)
}

// TestConfigDecoder_RequiredBadType checks that a required key of the wrong
// type is reported once, as a type error, not also as missing.
func TestConfigDecoder_RequiredBadType(t *testing.T) {
	d := NewConfigDecoder(map[string]any{"command": map[string]any{}})
	d.RequiredString("command")
	err := d.Err()
	must.ErrorIs(t, err, ErrInvalidConfig)
	must.False(t, errors.Is(err, ErrMissingKey))
}
