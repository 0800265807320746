package structs

import "reflect"

// serviceListType is the type of a group's or task's Services, which the
// differ pairs up as upstream does instead of comparing them as a set.
var serviceListType = reflect.TypeOf([]*Service(nil))

// services diffs two lists of services the way upstream's plan shows
// them: a service is paired with the one of the same name and port label,
// else with the one at the same position, so an edit is one "Service"
// object marked Edited rather than a deletion and an addition. A changed
// service lists all its fields, changed or not (empty ones too), as
// upstream does, so the reader can tell which service it is; an unchanged
// one is left out unless the diff is contextual.
func (d differ) services(old, new reflect.Value) []*ObjectDiff {
	var o, n []*Service
	if old.IsValid() {
		o = old.Interface().([]*Service)
	}
	if new.IsValid() {
		n = new.Interface().([]*Service)
	}
	pair := pairServices(o, n)
	var out []*ObjectDiff
	for _, p := range pair {
		if diff := d.service(p[0], p[1]); diff != nil {
			out = append(out, diff)
		}
	}
	return out
}

// pairServices pairs old and new services: by name and port label first,
// then by position among the rest; an unpaired service has a nil partner.
// The pairs follow the new list's order, deletions last.
func pairServices(old, new []*Service) [][2]*Service {
	oldTaken := make([]bool, len(old))
	match := make([]int, len(new))
	for i, s := range new {
		match[i] = -1
		for j, o := range old {
			if !oldTaken[j] && o.Name == s.Name && o.PortLabel == s.PortLabel {
				match[i], oldTaken[j] = j, true
				break
			}
		}
	}
	for i := range new {
		if match[i] < 0 && i < len(old) && !oldTaken[i] {
			match[i], oldTaken[i] = i, true
		}
	}
	var out [][2]*Service
	for i, s := range new {
		var o *Service
		if match[i] >= 0 {
			o = old[match[i]]
		}
		out = append(out, [2]*Service{o, s})
	}
	for j, o := range old {
		if !oldTaken[j] {
			out = append(out, [2]*Service{o, nil})
		}
	}
	return out
}

// service is one "Service" object: its fields, Tags and CanaryTags, and
// its checks as "Check" objects paired by name.
func (d differ) service(old, new *Service) *ObjectDiff {
	if reflect.DeepEqual(old, new) && !d.contextual {
		return nil
	}
	full := differ{contextual: true, keepEmpty: true}
	o := &ObjectDiff{Name: "Service"}
	o.Fields, o.Objects = full.structs(reflect.ValueOf(old), reflect.ValueOf(new), serviceDiffSkip)
	var oc, nc []*ServiceCheck
	if old != nil {
		oc = old.Checks
	}
	if new != nil {
		nc = new.Checks
	}
	o.Objects = append(o.Objects, full.checks(oc, nc)...)
	o.Type = diffType(old != nil, new != nil, changes(o.Fields, o.Objects))
	return o
}

var serviceDiffSkip = map[string]bool{"Checks": true}

// checks pairs a service's checks by name, as upstream, and diffs each
// changed pair as a "Check" object.
func (d differ) checks(old, new []*ServiceCheck) []*ObjectDiff {
	var out []*ObjectDiff
	add := func(o, n *ServiceCheck) {
		if reflect.DeepEqual(o, n) && !d.contextual {
			return
		}
		c := &ObjectDiff{Name: "Check"}
		c.Fields, c.Objects = d.structs(reflect.ValueOf(o), reflect.ValueOf(n), nil)
		c.Type = diffType(o != nil, n != nil, changes(c.Fields, c.Objects))
		out = append(out, c)
	}
	byName := func(list []*ServiceCheck, name string) *ServiceCheck {
		for _, c := range list {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
	for _, n := range new {
		add(byName(old, n.Name), n)
	}
	for _, o := range old {
		if byName(new, o.Name) == nil {
			add(o, nil)
		}
	}
	return out
}
