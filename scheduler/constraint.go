package scheduler

import (
	"strconv"
	"strings"

	"github.com/hashicorp/go-version"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// resolveTarget interpolates a constraint operand against node. Operands
// that are not ${...} are literals. found is false for an attribute or
// meta key the node does not have, or an unknown variable.
func resolveTarget(target string, node *structs.Node) (value string, found bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	name := target[2 : len(target)-1]
	switch name {
	case "node.unique.id":
		return node.ID, true
	case "node.unique.name":
		return node.Name, true
	case "node.datacenter":
		return node.Datacenter, true
	case "node.class":
		return node.NodeClass, true
	case "node.pool":
		return node.NodePool, true
	}
	if key, ok := strings.CutPrefix(name, "attr."); ok {
		v, ok := node.Attributes[key]
		return v, ok
	}
	if key, ok := strings.CutPrefix(name, "meta."); ok {
		v, ok := node.Meta[key]
		return v, ok
	}
	return "", false
}

// constraintMet evaluates one constraint (or affinity) operator against
// node. distinct_hosts and distinct_property are not node properties and
// are checked by their own checker; here they pass.
func constraintMet(ctx *EvalContext, operand, lTarget, rTarget string, node *structs.Node) bool {
	l, lok := resolveTarget(lTarget, node)
	r, rok := resolveTarget(rTarget, node)
	switch operand {
	case "", "=", "==", "is":
		return lok && rok && l == r
	case "!=", "not":
		return lok != rok || l != r
	case "<", "<=", ">", ">=":
		return lok && rok && orderMet(operand, l, r)
	case structs.ConstraintAttributeIsSet:
		return lok
	case structs.ConstraintAttributeIsNotSet:
		return !lok
	case structs.ConstraintRegex:
		if !lok || !rok {
			return false
		}
		re, err := ctx.regexp(r)
		return err == nil && re.MatchString(l)
	case structs.ConstraintVersion, structs.ConstraintSemver:
		return lok && rok && versionMet(ctx, operand, l, r)
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll:
		return lok && rok && setContains(l, r, true)
	case structs.ConstraintSetContainsAny:
		return lok && rok && setContains(l, r, false)
	case structs.ConstraintDistinctHosts, structs.ConstraintDistinctProperty:
		return true
	}
	return false
}

// orderMet compares numerically when both sides are numbers, else as
// strings.
func orderMet(op, l, r string) bool {
	var cmp int
	lf, lerr := strconv.ParseFloat(l, 64)
	rf, rerr := strconv.ParseFloat(r, 64)
	switch {
	case lerr == nil && rerr == nil:
		switch {
		case lf < rf:
			cmp = -1
		case lf > rf:
			cmp = 1
		}
	default:
		cmp = strings.Compare(l, r)
	}
	switch op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	}
	return cmp >= 0
}

// versionMet checks l against the constraint r. semver parses l strictly
// (major.minor.patch, optional pre-release); version accepts loose forms
// like "1.2".
func versionMet(ctx *EvalContext, op, l, r string) bool {
	var v *version.Version
	var err error
	if op == structs.ConstraintSemver {
		v, err = version.NewSemver(l)
	} else {
		v, err = version.NewVersion(l)
	}
	if err != nil {
		return false
	}
	vc, err := ctx.versionConstraint(r)
	return err == nil && vc.Check(v)
}

// setContains reports whether the comma-separated set l holds every (all)
// or any (!all) member of the comma-separated r.
func setContains(l, r string, all bool) bool {
	have := map[string]bool{}
	for _, s := range strings.Split(l, ",") {
		have[strings.TrimSpace(s)] = true
	}
	for _, s := range strings.Split(r, ",") {
		in := have[strings.TrimSpace(s)]
		if all && !in {
			return false
		}
		if !all && in {
			return true
		}
	}
	return all
}
