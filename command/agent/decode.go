package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/nomad-edge/nomad/helper/nesting"
)

// maxRequestBody bounds a request body; a job is a few kilobytes.
const maxRequestBody = 16 << 20

// decodeBody decodes a JSON request body into out (a pointer to a struct),
// strictly: a field out has no room for is an error naming it, because a
// setting the agent does not implement must not be silently dropped.
//
// Upstream's clients encode every field of their structs, set or not, so a
// job from the official Go client carries "Update": null, "Spreads": null,
// "Dispatched": false and the like. Those are absent settings, not
// unsupported ones: keys we do not know whose value is empty (null, false,
// 0, "", [] or {} all the way down) are dropped before the strict decode.
func decodeBody(r *http.Request, out any) error {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxRequestBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return codedErrorf(http.StatusRequestEntityTooLarge, "Request body too large: the limit is %d bytes", tooBig.Limit)
		}
		return codedErrorf(http.StatusBadRequest, "Reading request body failed: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: empty request body")
	}
	// encoding/json and pruneUnknown recurse per level, and the paths
	// they build grow with the depth: bound it before either runs.
	if err := nesting.CheckJSON(data, nesting.MaxDepth); err != nil {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}

	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep numbers verbatim for the second pass
	if err := dec.Decode(&tree); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unexpected data after the JSON value")
	}
	var unknown []string
	pruneUnknown(tree, reflect.TypeOf(out), "", &unknown)
	switch len(unknown) {
	case 0:
	case 1:
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unknown field %q", unknown[0])
	default:
		sort.Strings(unknown)
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unknown fields %q", unknown)
	}
	clean, err := json.Marshal(tree)
	if err != nil {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}
	strict := json.NewDecoder(bytes.NewReader(clean))
	strict.DisallowUnknownFields()
	if err := strict.Decode(out); err != nil {
		return decodeError(err)
	}
	return nil
}

// decodeOptionalBody is decodeBody for a request whose body may be left
// out: an empty body leaves out untouched.
func decodeOptionalBody(r *http.Request, out any) error {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxRequestBody))
	if err != nil {
		return codedErrorf(http.StatusBadRequest, "Reading request body failed: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return decodeBody(r, out)
}

// decodeError words an encoding/json error for the user.
func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return codedErrorf(http.StatusBadRequest, "Request decode failed: malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return codedErrorf(http.StatusBadRequest, "Request decode failed: malformed JSON: unexpected end of input")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the request"
		}
		return codedErrorf(http.StatusBadRequest, "Request decode failed: field %q must be %s, not a JSON %s", field, typ.Type, typ.Value)
	}
	return codedErrorf(http.StatusBadRequest, "Request decode failed: %v", err)
}

// pruneUnknown walks a generically decoded JSON value alongside the Go type
// it will be decoded into, deletes unknown keys whose value is empty and
// collects every unknown key with a value, by its path (e.g.
// "Job.TaskGroups[0].Update"), so one response names them all.
func pruneUnknown(v any, t reflect.Type, path string, unknown *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return // a type mismatch; the strict decode words it
		}
		fields := jsonFields(t)
		for key, val := range obj {
			ft, ok := fields[key]
			if !ok {
				ft, ok = fields[strings.ToLower(key)]
			}
			if !ok {
				if isEmptyJSON(val) {
					delete(obj, key)
					continue
				}
				*unknown = append(*unknown, joinPath(path, key))
				continue
			}
			pruneUnknown(val, ft, joinPath(path, key), unknown)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return
		}
		for i, el := range arr {
			pruneUnknown(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), unknown)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for key, val := range obj {
			pruneUnknown(val, t.Elem(), fmt.Sprintf("%s[%q]", path, key), unknown)
		}
	}
	// Scalars and interfaces (free-form driver config) hold anything.
}

// jsonFields maps a struct's JSON keys, as encoding/json would match them
// (exact name and lower-cased, promoted fields of embedded structs
// included), to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			tagName, _, _ := strings.Cut(tag, ",")
			if tagName == "-" {
				continue
			}
			if tagName != "" {
				name = tagName
			}
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			continue // its fields are promoted and listed themselves
		}
		out[name] = f.Type
		if _, taken := out[strings.ToLower(name)]; !taken {
			out[strings.ToLower(name)] = f.Type
		}
	}
	return out
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// isEmptyJSON reports whether a decoded JSON value carries no setting.
func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, el := range x {
			if !isEmptyJSON(el) {
				return false
			}
		}
		return true
	}
	return false
}
