package structs

import (
	"fmt"
	"reflect"
)

// NullElements lists the null entries of v's lists and maps of pointers,
// by path ("Job.TaskGroups[1].Tasks[0]"). A job decoded from JSON or
// msgpack may carry `null` where an object belongs; every later step
// (defaults, validation, the scheduler) takes those entries to be objects,
// so a request holding one is refused before anything else looks at it.
func NullElements(name string, v any) []string {
	var out []string
	walkNulls(reflect.ValueOf(v), name, &out, 0)
	return out
}

// walkNulls descends at most MaxNestingDepth levels, the most a request
// that passed the decoders can hold.
func walkNulls(v reflect.Value, path string, out *[]string, depth int) {
	if depth > MaxNestingDepth || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkNulls(v.Elem(), path, out, depth+1)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				walkNulls(v.Field(i), path+"."+f.Name, out, depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			el := v.Index(i)
			p := fmt.Sprintf("%s[%d]", path, i)
			if el.Kind() == reflect.Pointer && el.IsNil() {
				*out = append(*out, p+" is null")
				continue
			}
			walkNulls(el, p, out, depth+1)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			el := iter.Value()
			p := fmt.Sprintf("%s[%v]", path, iter.Key())
			if el.Kind() == reflect.Pointer && el.IsNil() {
				*out = append(*out, p+" is null")
				continue
			}
			walkNulls(el, p, out, depth+1)
		}
	}
}
