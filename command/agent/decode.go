package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"sort"

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
	// encoding/json and scanFields recurse per level, and the paths they
	// build grow with the depth: bound it before either runs.
	if err := nesting.CheckJSON(data, nesting.MaxDepth); err != nil {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: %v", err)
	}

	scan := scanFields(data, reflect.TypeOf(out))
	if scan.bad {
		// Not JSON: encoding/json says where and why.
		var tree any
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&tree); err != nil {
			return decodeError(err)
		}
		return codedErrorf(http.StatusBadRequest, "Request decode failed: malformed JSON")
	}
	if scan.trailing() {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unexpected data after the JSON value")
	}
	switch unknown := scan.unknown; len(unknown) {
	case 0:
	case 1:
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unknown field %q", unknown[0])
	default:
		sort.Strings(unknown)
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unknown fields %q", unknown)
	}
	strict := json.NewDecoder(bytes.NewReader(scan.clean()))
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
