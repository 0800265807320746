package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

// legacyDecode is decodeBody as it was before fieldScan, the oracle of
// TestDecodeBody_AsTheThreePassDecode: decode into a generic tree, prune
// the unknown keys whose value is empty and collect the others, encode the
// tree again and decode that strictly.
func legacyDecode(data []byte, out any) error {
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return codedErrorf(http.StatusBadRequest, "Request decode failed: unexpected data after the JSON value")
	}
	var unknown []string
	legacyPrune(tree, reflect.TypeOf(out), "", &unknown)
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
		return err
	}
	strict := json.NewDecoder(bytes.NewReader(clean))
	strict.DisallowUnknownFields()
	if err := strict.Decode(out); err != nil {
		return decodeError(err)
	}
	return nil
}

func legacyPrune(v any, t reflect.Type, path string, unknown *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := fieldsOf(t)
		for key, val := range obj {
			ft, ok := fields[key]
			if !ok {
				ft, ok = fields[strings.ToLower(key)]
			}
			if !ok {
				if legacyEmpty(val) {
					delete(obj, key)
					continue
				}
				*unknown = append(*unknown, join(key))
				continue
			}
			legacyPrune(val, ft, join(key), unknown)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return
		}
		for i, el := range arr {
			legacyPrune(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), unknown)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for key, val := range obj {
			legacyPrune(val, t.Elem(), fmt.Sprintf("%s[%q]", path, key), unknown)
		}
	}
}

func legacyEmpty(v any) bool {
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
			if !legacyEmpty(el) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonFor draws a JSON text that mostly fits t: known fields (some
// spelled in lower case or with an escape), unknown keys with empty and
// non-empty values, wrong types now and then, random whitespace. Keys
// are unique in each object (encoding/json and a generic map disagree
// on which of two duplicates wins) and sorted, as the three-pass decode
// re-encoded them: with two wrong types, encoding/json names the first.
func jsonFor(rt *rapid.T, t reflect.Type, depth int) string {
	ws := func() string { return rapid.SampledFrom([]string{"", "", " ", "\n  ", "\t"}).Draw(rt, "ws") }
	for t.Kind() == reflect.Pointer {
		if rapid.IntRange(0, 5).Draw(rt, "nil") == 0 {
			return "null"
		}
		t = t.Elem()
	}
	if depth <= 0 || rapid.IntRange(0, 12).Draw(rt, "mismatch") == 0 {
		return anyJSON(rt, depth)
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := reflect.VisibleFields(t)
		type kv struct{ key, text string }
		var members []kv
		used := map[string]bool{}
		for range rapid.IntRange(0, 6).Draw(rt, "members") {
			var key, val string
			if len(fields) > 0 && rapid.IntRange(0, 3).Draw(rt, "unknown") > 0 {
				f := rapid.SampledFrom(fields).Draw(rt, "field")
				if !f.IsExported() || (f.Anonymous && f.Tag.Get("json") == "") {
					continue
				}
				name := f.Name
				if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" {
					if tag == "-" {
						continue
					}
					name = tag
				}
				if used[strings.ToLower(name)] {
					continue
				}
				used[strings.ToLower(name)] = true
				key, val = name, jsonFor(rt, f.Type, depth-1)
				switch rapid.IntRange(0, 8).Draw(rt, "spelling") {
				case 0:
					key = strings.ToLower(key)
				case 1:
					key = fmt.Sprintf(`\u%04x`, key[0]) + key[1:]
				}
			} else {
				key = rapid.SampledFrom([]string{"Nope", "Consul", "Update2", "x"}).Draw(rt, "unknown key")
				if used[strings.ToLower(key)] {
					continue
				}
				used[strings.ToLower(key)] = true
				if rapid.Bool().Draw(rt, "empty") {
					val = emptyJSON(rt, 2)
				} else {
					val = anyJSON(rt, 2)
				}
			}
			var plain string
			must.NoError(rt, json.Unmarshal([]byte(`"`+key+`"`), &plain))
			members = append(members, kv{plain, ws() + `"` + key + `"` + ws() + ":" + ws() + val + ws()})
		}
		sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
		var texts []string
		for _, m := range members {
			texts = append(texts, m.text)
		}
		return "{" + strings.Join(texts, ",") + "}"
	case reflect.Map:
		var members []string
		for i := range rapid.IntRange(0, 3).Draw(rt, "map keys") {
			members = append(members, fmt.Sprintf(`%s"k%d"%s:%s`, ws(), i, ws(), jsonFor(rt, t.Elem(), depth-1)))
		}
		return "{" + strings.Join(members, ",") + "}"
	case reflect.Slice, reflect.Array:
		var els []string
		for range rapid.IntRange(0, 3).Draw(rt, "elements") {
			els = append(els, ws()+jsonFor(rt, t.Elem(), depth-1)+ws())
		}
		return "[" + strings.Join(els, ",") + "]"
	case reflect.String:
		return rapid.SampledFrom([]string{`""`, `"web"`, `"a\"b\\c"`, `"\u00e9\n"`, `"<&>"`}).Draw(rt, "string")
	case reflect.Bool:
		return rapid.SampledFrom([]string{"true", "false"}).Draw(rt, "bool")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return rapid.SampledFrom([]string{"0", "3", "-1", "2.5", "1e3", "-0", "0.0", "99999999999999999999"}).Draw(rt, "number")
	}
	return anyJSON(rt, depth)
}

func emptyJSON(rt *rapid.T, depth int) string {
	if depth > 0 && rapid.IntRange(0, 3).Draw(rt, "nested empty") == 0 {
		return `{"a": ` + emptyJSON(rt, depth-1) + `, "b":null}`
	}
	return rapid.SampledFrom([]string{"null", "false", "0", "0.0", "-0", `""`, "[]", "{}", "0e5"}).Draw(rt, "empty")
}

func anyJSON(rt *rapid.T, depth int) string {
	if depth > 0 {
		switch rapid.IntRange(0, 4).Draw(rt, "any kind") {
		case 0:
			return `{"q": ` + anyJSON(rt, depth-1) + `}`
		case 1:
			return `[` + anyJSON(rt, depth-1) + `, 1]`
		}
	}
	return rapid.SampledFrom([]string{"null", "true", "false", "1", "-2.5e-3", `"s"`, `""`, "[]", "{}", "0"}).Draw(rt, "scalar")
}

// normal is v as a generic JSON value, to compare decodes whatever the
// key order or spacing inside their raw messages.
func normal(t *rapid.T, v any) any {
	b, err := json.Marshal(v)
	must.NoError(t, err)
	var out any
	must.NoError(t, json.Unmarshal(b, &out))
	return out
}

// The one-walk decode accepts, refuses and decodes every body as the
// three-pass decode it replaced did: the same value, or the same error
// word for word (unknown fields named by the same paths, type errors at
// the same field, malformed JSON at the same byte), for the request types
// the job and namespace endpoints decode.
func TestDecodeBody_AsTheThreePassDecode(t *testing.T) {
	types := []func() any{
		func() any { return &jobRegisterBody{} },
		func() any { return &jobValidateBody{} },
		func() any { return &namespaceBody{} },
	}
	rapid.Check(t, func(rt *rapid.T) {
		newOut := rapid.SampledFrom(types).Draw(rt, "type")
		want, got := newOut(), newOut()
		body := jsonFor(rt, reflect.TypeOf(want), 7)
		if rapid.IntRange(0, 9).Draw(rt, "break") == 0 {
			at := rapid.IntRange(0, len(body)).Draw(rt, "cut at")
			body = body[:at] + rapid.SampledFrom([]string{"", ",", "}", "\x01", `"`, "tru"}).Draw(rt, "junk") + body[at:]
		}
		wantErr := legacyDecode([]byte(body), want)
		var first any
		if json.NewDecoder(strings.NewReader(body)).Decode(&first) == nil && !json.Valid([]byte(body)) {
			// The one difference, on purpose: the three-pass decode let a
			// stray } or ] after the value through (json.Decoder.More
			// stops at them).
			wantErr = codedErrorf(http.StatusBadRequest, "Request decode failed: unexpected data after the JSON value")
		}
		r := httptest.NewRequest(http.MethodPut, "/v1/jobs", strings.NewReader(body))
		gotErr := decodeBody(r, got)
		if wantErr != nil || gotErr != nil {
			if wantErr == nil || gotErr == nil {
				rt.Fatalf("body %s\nthree-pass: %v\none walk:  %v", body, wantErr, gotErr)
			}
			must.Eq(rt, wantErr.Error(), gotErr.Error(), must.Sprintf("body %s", body))
			return
		}
		must.Eq(rt, normal(rt, want), normal(rt, got), must.Sprintf("body %s", body))
	})
}

// The walk accepts exactly the bodies encoding/json accepts, so a body
// it refuses is always one encoding/json refuses too (and words).
func TestFieldScan_SyntaxAsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tokens := []string{"{", "}", "[", "]", ",", ":", `"a"`, `"\u00e9"`, `"\x"`, `"\u12"`, "\"\x01\"", "1", "-", "0.",
			"01", "1e", "1e+5", "-0.5", "true", "nul", "null", "false", " ", "\n", `""`, `"b\"c"`}
		var b strings.Builder
		for range rapid.IntRange(1, 12).Draw(rt, "tokens") {
			b.WriteString(rapid.SampledFrom(tokens).Draw(rt, "token"))
		}
		data := []byte(b.String())
		scan := scanFields(data, reflect.TypeOf(&namespaceBody{}))
		valid := json.Valid(data)
		must.Eq(rt, valid, !scan.bad && !scan.trailing(), must.Sprintf("body %q", data))
	})
}

// BenchmarkDecodeBody_Job decodes the body the official Go client sends
// for a small service job (every field of its structs, most of them
// null), one walk against the three-pass decode it replaced.
//
//	go test -run '^$' -bench DecodeBody_Job -benchmem ./command/agent/
func BenchmarkDecodeBody_Job(b *testing.B) {
	job := nomadapi.NewServiceJob("web", "web", "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("g", 1)
	task := nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1h")
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	body, err := json.Marshal(&nomadapi.JobRegisterRequest{Job: job})
	must.NoError(b, err)
	b.Run("one-walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out jobRegisterBody
			r := httptest.NewRequest(http.MethodPut, "/v1/jobs", bytes.NewReader(body))
			if err := decodeBody(r, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("three-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out jobRegisterBody
			if err := legacyDecode(body, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
