package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// fieldScan is one walk of a JSON request body's bytes alongside the Go
// type it will be decoded into. It finds the keys the type has no field
// for: those whose value is empty (null, false, 0, "", [] or {} of empty
// values) become byte ranges to cut out, the others are collected by
// their path for the error. The walk builds no values and copies no
// bytes, so decodeBody's one real decode, into the typed value, is the
// only other pass over the body (the generic decode, prune and re-encode
// it replaces cost as much as that decode three times over).
//
// It also checks the JSON's syntax as encoding/json does, so that a body
// it accepts is one encoding/json accepts; a body it refuses is decoded by
// encoding/json to word the error. The nesting depth is bounded before
// it runs (nesting.CheckJSON), which bounds its recursion.
type fieldScan struct {
	data []byte
	pos  int
	// cuts are the [start, end) ranges of members to drop, each with the
	// comma that separates it from a kept neighbour.
	cuts [][2]int
	// unknown are the paths of unknown keys that carry a value.
	unknown []string
	// path is where the walk is, rendered only when an unknown key is
	// found.
	path []pathStep
	// bad is set at the first syntax error.
	bad bool
	// members is a stack of the members of the objects being walked,
	// shared so that an object costs no allocation of its own.
	members []member
}

// pathStep is one step of a path: an object key (the raw bytes of its
// quoted string, escapes and all) or an array index.
type pathStep struct {
	key   []byte
	index int
	// mapKey renders the key as a map's, ["key"], not as a field's.
	mapKey bool
}

// scanFields walks data as a value of type t.
func scanFields(data []byte, t reflect.Type) *fieldScan {
	s := &fieldScan{data: data, path: make([]pathStep, 0, 16), members: make([]member, 0, 64)}
	s.value(t)
	if !s.bad {
		s.space()
	}
	return s
}

// trailing reports whether anything but whitespace follows the value.
func (s *fieldScan) trailing() bool { return !s.bad && s.pos < len(s.data) }

// clean is data without the cut members.
func (s *fieldScan) clean() []byte {
	if len(s.cuts) == 0 {
		return s.data
	}
	slices.SortFunc(s.cuts, func(a, b [2]int) int { return a[0] - b[0] })
	out := make([]byte, 0, len(s.data))
	at := 0
	for _, c := range s.cuts {
		out = append(out, s.data[at:c[0]]...)
		at = c[1]
	}
	return append(out, s.data[at:]...)
}

func (s *fieldScan) fail() { s.bad = true }

func (s *fieldScan) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value walks one value that decodes into t: objects and arrays of a
// struct, map, slice or array type are walked against it; anything else
// (scalars, interfaces, a type mismatch the decode will word) is only
// checked for syntax.
func (s *fieldScan) value(t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.space()
	if s.pos >= len(s.data) {
		s.fail()
		return
	}
	switch c := s.data[s.pos]; {
	case c == '{' && t.Kind() == reflect.Struct:
		s.object(fieldsOf(t), nil)
	case c == '{' && t.Kind() == reflect.Map:
		s.object(nil, t.Elem())
	case c == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		s.array(t.Elem())
	default:
		s.skip()
	}
}

// member is one key and value of an object being walked.
type member struct {
	start, end int
	cut        bool
}

// object walks an object whose keys are fields (a struct's) or, when
// fields is nil, map keys whose values are of type elem.
func (s *fieldScan) object(fields map[string]reflect.Type, elem reflect.Type) {
	s.pos++ // {
	base := len(s.members)
	defer func() { s.members = s.members[:base] }()
	for first := true; ; first = false {
		s.space()
		if s.pos >= len(s.data) {
			s.fail()
			return
		}
		if s.data[s.pos] == '}' && first {
			s.pos++
			return
		}
		start := s.pos
		key, ok := s.str()
		if !ok {
			s.fail()
			return
		}
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			s.fail()
			return
		}
		s.pos++
		m := member{start: start}
		ft := elem
		if fields != nil {
			ft = lookupField(fields, key)
		}
		if ft != nil {
			s.path = append(s.path, pathStep{key: key, mapKey: fields == nil})
			s.value(ft)
			s.path = s.path[:len(s.path)-1]
		} else if s.skip() {
			m.cut = true
		} else if !s.bad {
			s.unknown = append(s.unknown, s.render(key))
		}
		if s.bad {
			return
		}
		m.end = s.pos
		s.members = append(s.members, m)
		if s.next('}') {
			s.cutMembers(s.members[base:])
			return
		}
		if s.bad {
			return
		}
	}
}

// next reads the separator after a member or element: true when close
// ends the object or array, false after a comma or on anything else,
// which fails the scan.
func (s *fieldScan) next(close byte) bool {
	s.space()
	if s.pos >= len(s.data) {
		s.fail()
		return false
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		return false
	case close:
		s.pos++
		return true
	}
	s.fail()
	return false
}

// cutMembers records the ranges that remove an object's cut members and
// their commas: those before the first kept member up to its key, each
// later one from the end of the member before it.
func (s *fieldScan) cutMembers(members []member) {
	firstKept := slices.IndexFunc(members, func(m member) bool { return !m.cut })
	if firstKept < 0 {
		if len(members) > 0 {
			s.cuts = append(s.cuts, [2]int{members[0].start, members[len(members)-1].end})
		}
		return
	}
	if firstKept > 0 {
		s.cuts = append(s.cuts, [2]int{members[0].start, members[firstKept].start})
	}
	for i := firstKept + 1; i < len(members); i++ {
		if members[i].cut {
			s.cuts = append(s.cuts, [2]int{members[i-1].end, members[i].end})
		}
	}
}

func (s *fieldScan) array(elem reflect.Type) {
	s.pos++ // [
	for i := 0; ; i++ {
		s.space()
		if s.pos >= len(s.data) {
			s.fail()
			return
		}
		if s.data[s.pos] == ']' && i == 0 {
			s.pos++
			return
		}
		s.path = append(s.path, pathStep{index: i})
		s.value(elem)
		s.path = s.path[:len(s.path)-1]
		if s.bad || s.next(']') {
			return
		}
	}
}

// skip walks any value and reports whether it is empty.
func (s *fieldScan) skip() (empty bool) {
	s.space()
	if s.pos >= len(s.data) {
		s.fail()
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		s.pos++
		empty = true
		for first := true; ; first = false {
			s.space()
			if s.pos < len(s.data) && s.data[s.pos] == '}' && first {
				s.pos++
				return true
			}
			if _, ok := s.str(); !ok {
				s.fail()
				return false
			}
			s.space()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				s.fail()
				return false
			}
			s.pos++
			empty = s.skip() && empty
			if s.bad {
				return false
			}
			if s.next('}') {
				return empty
			}
			if s.bad {
				return false
			}
		}
	case c == '[':
		s.pos++
		for i := 0; ; i++ {
			s.space()
			if s.pos < len(s.data) && s.data[s.pos] == ']' && i == 0 {
				s.pos++
				return true
			}
			s.skip()
			if s.bad || s.next(']') {
				return false // an array with elements is a setting
			}
		}
	case c == '"':
		raw, ok := s.str()
		if !ok {
			s.fail()
		}
		return ok && len(raw) == 2
	case c == 'n':
		return s.literal("null")
	case c == 'f':
		return s.literal("false")
	case c == 't':
		s.literal("true")
		return false
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.pos
		if !s.number() {
			s.fail()
			return false
		}
		f, err := strconv.ParseFloat(string(s.data[start:s.pos]), 64)
		return err == nil && f == 0
	}
	s.fail()
	return false
}

func (s *fieldScan) literal(word string) bool {
	if !strings.HasPrefix(string(s.data[s.pos:min(len(s.data), s.pos+len(word))]), word) {
		s.fail()
		return false
	}
	s.pos += len(word)
	return true
}

// number walks a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *fieldScan) number() bool {
	d := s.data
	if s.pos < len(d) && d[s.pos] == '-' {
		s.pos++
	}
	digits := func() int {
		n := 0
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	switch {
	case s.pos < len(d) && d[s.pos] == '0':
		s.pos++
	case digits() == 0:
		return false
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return false
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// str walks a string at pos and returns its raw bytes, quotes included.
func (s *fieldScan) str() ([]byte, bool) {
	d := s.data
	if s.pos >= len(d) || d[s.pos] != '"' {
		return nil, false
	}
	start := s.pos
	s.pos++
	for s.pos < len(d) {
		switch c := d[s.pos]; {
		case c == '"':
			s.pos++
			return d[start:s.pos], true
		case c == '\\':
			if s.pos+1 >= len(d) {
				return nil, false
			}
			switch d[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				if s.pos+6 > len(d) {
					return nil, false
				}
				for _, h := range d[s.pos+2 : s.pos+6] {
					if !isHex(h) {
						return nil, false
					}
				}
				s.pos += 6
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		default:
			s.pos++
		}
	}
	return nil, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// keyString is the text of a raw quoted key.
func keyString(raw []byte) string {
	if !slices.Contains(raw, '\\') {
		return string(raw[1 : len(raw)-1])
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return string(raw[1 : len(raw)-1])
	}
	return k
}

// lookupField is the type of the field a raw key names, matched as
// encoding/json would (exactly, else case-insensitively), or nil.
func lookupField(fields map[string]reflect.Type, raw []byte) reflect.Type {
	if !slices.Contains(raw, '\\') {
		if ft, ok := fields[string(raw[1:len(raw)-1])]; ok {
			return ft
		}
	}
	k := keyString(raw)
	if ft, ok := fields[k]; ok {
		return ft
	}
	return fields[strings.ToLower(k)]
}

// render is the path of key under the walk's current position, as
// "Job.TaskGroups[0].Update" (a map key as `Meta["k"]`).
func (s *fieldScan) render(key []byte) string {
	var b strings.Builder
	for _, p := range s.path {
		switch {
		case p.key == nil:
			fmt.Fprintf(&b, "[%d]", p.index)
		case p.mapKey:
			fmt.Fprintf(&b, "[%q]", keyString(p.key))
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(keyString(p.key))
		}
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(keyString(key))
	return b.String()
}

// structFields caches fieldsOf: the request types are few and fixed.
var structFields sync.Map // reflect.Type → map[string]reflect.Type

// fieldsOf maps a struct's JSON keys, as encoding/json would match them
// (exact name and lower-cased, promoted fields of embedded structs
// included), to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := structFields.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
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
	structFields.Store(t, out)
	return out
}
