package structs

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
)

// Diff types: how an object or field changed from one job version to the
// next. The values are upstream's wire strings.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// JobDiff is the change from one job version to another, as `job plan`
// and `job history -p` show it.
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is the change to one task group. Updates counts the
// scheduler's decisions for the group ("create", "in-place update", ...)
// when the diff comes from a plan.
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is the change to one task.
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// ObjectDiff is the change to a nested object (a constraint, resources, a
// task's config).
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// FieldDiff is the change to one field; Old or New is empty when the field
// was added or deleted.
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// Update kinds, the keys of TaskGroupDiff.Updates (upstream's strings).
const (
	UpdateTypeIgnore            = "ignore"
	UpdateTypeCreate            = "create"
	UpdateTypeDestroy           = "destroy"
	UpdateTypeMigrate           = "migrate"
	UpdateTypeCanary            = "canary"
	UpdateTypeInplaceUpdate     = "in-place update"
	UpdateTypeDestructiveUpdate = "create/destroy update"
)

// Fields the servers maintain or that name an object rather than describe
// it: a diff of them would be noise.
var (
	jobDiffSkip   = map[string]bool{"ID": true, "Status": true, "StatusDescription": true, "Stable": true, "Version": true, "SubmitTime": true, "CreateIndex": true, "ModifyIndex": true, "JobModifyIndex": true, "TaskGroups": true, "Payload": true}
	groupDiffSkip = map[string]bool{"Name": true, "Tasks": true}
	taskDiffSkip  = map[string]bool{"Name": true}
)

// ErrDiffMismatch is returned when asked to diff two different jobs.
var ErrDiffMismatch = fmt.Errorf("%w: can not diff jobs with different IDs", ErrInvalidRequest)

// Diff returns the change from j (nil for a job not registered yet) to
// other. contextual also lists what did not change (type None), which is
// how `job plan -verbose` shows a change among its neighbours.
func (j *Job) Diff(other *Job, contextual bool) (*JobDiff, error) {
	if other == nil {
		return nil, fmt.Errorf("%w: missing job to diff against", ErrMissingField)
	}
	if j != nil && j.ID != other.ID {
		return nil, ErrDiffMismatch
	}
	d := differ{contextual: contextual}
	out := &JobDiff{ID: other.ID}
	out.Fields, out.Objects = d.structs(reflect.ValueOf(j), reflect.ValueOf(other), jobDiffSkip)
	var oldGroups []*TaskGroup
	if j != nil {
		oldGroups = j.TaskGroups
	}
	out.TaskGroups = d.groups(oldGroups, other.TaskGroups)
	changed := changes(out.Fields, out.Objects)
	for _, g := range out.TaskGroups {
		changed = changed || g.Type != DiffTypeNone
	}
	out.Type = diffType(j != nil, true, changed)
	return out, nil
}

// differ holds how a diff is made. contextual lists unchanged fields
// too; keepEmpty lists them even when empty on both sides, as upstream
// does inside a service.
type differ struct{ contextual, keepEmpty bool }

func diffType(hadOld, hasNew, changed bool) string {
	switch {
	case !hadOld:
		return DiffTypeAdded
	case !hasNew:
		return DiffTypeDeleted
	case changed:
		return DiffTypeEdited
	}
	return DiffTypeNone
}

func changes(fields []*FieldDiff, objects []*ObjectDiff) bool {
	for _, f := range fields {
		if f.Type != DiffTypeNone {
			return true
		}
	}
	for _, o := range objects {
		if o.Type != DiffTypeNone {
			return true
		}
	}
	return false
}

func (d differ) groups(old, new []*TaskGroup) []*TaskGroupDiff {
	byName := map[string][2]*TaskGroup{}
	for _, g := range old {
		byName[g.Name] = [2]*TaskGroup{g, nil}
	}
	for _, g := range new {
		p := byName[g.Name]
		p[1] = g
		byName[g.Name] = p
	}
	var out []*TaskGroupDiff
	for _, name := range sortedKeys(byName) {
		o, n := byName[name][0], byName[name][1]
		gd := &TaskGroupDiff{Name: name}
		gd.Fields, gd.Objects = d.structs(reflect.ValueOf(o), reflect.ValueOf(n), groupDiffSkip)
		var ot, nt []*Task
		if o != nil {
			ot = o.Tasks
		}
		if n != nil {
			nt = n.Tasks
		}
		gd.Tasks = d.tasks(ot, nt)
		changed := changes(gd.Fields, gd.Objects)
		for _, t := range gd.Tasks {
			changed = changed || t.Type != DiffTypeNone
		}
		gd.Type = diffType(o != nil, n != nil, changed)
		if gd.Type != DiffTypeNone || d.contextual {
			out = append(out, gd)
		}
	}
	return out
}

func (d differ) tasks(old, new []*Task) []*TaskDiff {
	byName := map[string][2]*Task{}
	for _, t := range old {
		byName[t.Name] = [2]*Task{t, nil}
	}
	for _, t := range new {
		p := byName[t.Name]
		p[1] = t
		byName[t.Name] = p
	}
	var out []*TaskDiff
	for _, name := range sortedKeys(byName) {
		o, n := byName[name][0], byName[name][1]
		td := &TaskDiff{Name: name}
		td.Fields, td.Objects = d.structs(reflect.ValueOf(o), reflect.ValueOf(n), taskDiffSkip)
		td.Type = diffType(o != nil, n != nil, changes(td.Fields, td.Objects))
		if td.Type != DiffTypeNone || d.contextual {
			out = append(out, td)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// structs compares two values of one struct type, either of which may be
// a nil pointer, field by field.
func (d differ) structs(old, new reflect.Value, skip map[string]bool) ([]*FieldDiff, []*ObjectDiff) {
	old, new = deref(old), deref(new)
	var t reflect.Type
	switch {
	case old.IsValid():
		t = old.Type()
	case new.IsValid():
		t = new.Type()
	default:
		return nil, nil
	}
	var fields []*FieldDiff
	var objects []*ObjectDiff
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		ov, nv := fieldOf(old, i), fieldOf(new, i)
		switch ft := derefType(f.Type); {
		case scalar(ft.Kind()):
			fields = d.field(fields, f.Name, scalarString(ov), scalarString(nv))
		case ft.Kind() == reflect.Slice && scalar(ft.Elem().Kind()):
			objects = d.appendObject(objects, d.scalarSet(f.Name, ov, nv))
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String:
			fields = d.stringMap(fields, f.Name, ov, nv)
		case ft.Kind() == reflect.Map:
			objects = d.appendObject(objects, d.freeform(f.Name, ov, nv))
		case ft.Kind() == reflect.Struct:
			objects = d.appendObject(objects, d.object(f.Name, ov, nv))
		case f.Type == serviceListType:
			objects = append(objects, d.services(ov, nv)...)
		case ft.Kind() == reflect.Slice && derefType(ft.Elem()).Kind() == reflect.Struct:
			objects = append(objects, d.objectSet(derefType(ft.Elem()).Name(), ov, nv)...)
		}
	}
	sort.SliceStable(fields, func(a, b int) bool { return fields[a].Name < fields[b].Name })
	sort.SliceStable(objects, func(a, b int) bool { return objects[a].Name < objects[b].Name })
	return fields, objects
}

func (d differ) appendObject(objects []*ObjectDiff, o *ObjectDiff) []*ObjectDiff {
	if o == nil {
		return objects
	}
	return append(objects, o)
}

// field appends the diff of one field, by upstream's rule: an empty old
// value is an addition, an empty new one a deletion.
func (d differ) field(out []*FieldDiff, name, old, new string) []*FieldDiff {
	typ := DiffTypeNone
	switch {
	case old == new:
		if !d.contextual || (new == "" && !d.keepEmpty) {
			return out
		}
	case old == "":
		typ = DiffTypeAdded
	case new == "":
		typ = DiffTypeDeleted
	default:
		typ = DiffTypeEdited
	}
	return append(out, &FieldDiff{Type: typ, Name: name, Old: old, New: new})
}

func (d differ) object(name string, old, new reflect.Value) *ObjectDiff {
	old, new = deref(old), deref(new)
	if !old.IsValid() && !new.IsValid() {
		return nil
	}
	o := &ObjectDiff{Name: name}
	o.Fields, o.Objects = d.structs(old, new, nil)
	o.Type = diffType(old.IsValid(), new.IsValid(), changes(o.Fields, o.Objects))
	if o.Type == DiffTypeNone && !d.contextual {
		return nil
	}
	return o
}

// objectSet compares two lists of objects as sets: an element found
// unchanged in the other list is no change, whatever its position.
func (d differ) objectSet(name string, old, new reflect.Value) []*ObjectDiff {
	var out []*ObjectDiff
	contains := func(list reflect.Value, v reflect.Value) bool {
		for i := range lenOf(list) {
			if reflect.DeepEqual(list.Index(i).Interface(), v.Interface()) {
				return true
			}
		}
		return false
	}
	plain := differ{contextual: true}
	for i := range lenOf(old) {
		if v := old.Index(i); !contains(new, v) {
			out = append(out, plain.object(name, v, reflect.Value{}))
		}
	}
	for i := range lenOf(new) {
		if v := new.Index(i); !contains(old, v) {
			out = append(out, plain.object(name, reflect.Value{}, v))
		}
	}
	return out
}

// scalarSet compares two lists of scalars (datacenters) as sets.
func (d differ) scalarSet(name string, old, new reflect.Value) *ObjectDiff {
	count := func(list reflect.Value) map[string]bool {
		m := map[string]bool{}
		for i := range lenOf(list) {
			m[scalarString(list.Index(i))] = true
		}
		return m
	}
	o, n := count(old), count(new)
	all := map[string]bool{}
	for k := range o {
		all[k] = true
	}
	for k := range n {
		all[k] = true
	}
	obj := &ObjectDiff{Name: name}
	for _, k := range sortedKeys(all) {
		var ov, nv string
		if o[k] {
			ov = k
		}
		if n[k] {
			nv = k
		}
		obj.Fields = d.field(obj.Fields, name, ov, nv)
	}
	obj.Type = setDiffType(obj.Fields)
	if len(obj.Fields) == 0 || (obj.Type == DiffTypeNone && !d.contextual) {
		return nil
	}
	return obj
}

// setDiffType is the type of a set's diff by upstream's rule: Added when
// members were only added, Deleted when only removed, Edited for both.
func setDiffType(fields []*FieldDiff) string {
	var added, deleted bool
	for _, f := range fields {
		added = added || f.Type == DiffTypeAdded
		deleted = deleted || f.Type == DiffTypeDeleted
	}
	switch {
	case added && deleted:
		return DiffTypeEdited
	case added:
		return DiffTypeAdded
	case deleted:
		return DiffTypeDeleted
	}
	return DiffTypeNone
}

// stringMap diffs a map[string]string as fields named Name[key].
func (d differ) stringMap(out []*FieldDiff, name string, old, new reflect.Value) []*FieldDiff {
	o, n := flatten(old), flatten(new)
	for _, k := range unionKeys(o, n) {
		out = d.field(out, fmt.Sprintf("%s[%s]", name, k), o[k], n[k])
	}
	return out
}

// freeform diffs free-form maps (a task's config) as one object whose
// fields are the flattened keys.
func (d differ) freeform(name string, old, new reflect.Value) *ObjectDiff {
	o, n := flatten(old), flatten(new)
	if len(o) == 0 && len(n) == 0 {
		return nil
	}
	obj := &ObjectDiff{Name: name}
	for _, k := range unionKeys(o, n) {
		obj.Fields = d.field(obj.Fields, k, o[k], n[k])
	}
	obj.Type = diffType(len(o) > 0, len(n) > 0, changes(obj.Fields, nil))
	if obj.Type == DiffTypeNone && !d.contextual {
		return nil
	}
	return obj
}

func unionKeys(a, b map[string]string) []string {
	all := map[string]bool{}
	for k := range a {
		all[k] = true
	}
	for k := range b {
		all[k] = true
	}
	return sortedKeys(all)
}

// flatten turns nested maps and lists into key paths (a.b, a[0]) and
// their scalar values.
func flatten(v reflect.Value) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		v = deref(v)
		switch {
		case !v.IsValid():
		case v.Kind() == reflect.Map:
			for _, k := range v.MapKeys() {
				key := fmt.Sprint(k.Interface())
				if prefix != "" {
					key = prefix + "." + key
				}
				walk(key, v.MapIndex(k))
			}
		case v.Kind() == reflect.Slice || v.Kind() == reflect.Array:
			for i := range v.Len() {
				walk(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i))
			}
		case v.Kind() == reflect.Struct:
			// A map of structs (a group's Volumes): one key per field.
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					walk(prefix+"."+f.Name, v.Field(i))
				}
			}
		default:
			out[prefix] = scalarString(v)
		}
	}
	walk("", v)
	return out
}

func scalar(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// scalarString formats a scalar as upstream's flattened form does:
// durations as nanoseconds, absent values as "".
func scalarString(v reflect.Value) string {
	v = deref(v)
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldOf(v reflect.Value, i int) reflect.Value {
	if !v.IsValid() {
		return reflect.Value{}
	}
	return v.Field(i)
}

func lenOf(v reflect.Value) int {
	if !v.IsValid() {
		return 0
	}
	return v.Len()
}
