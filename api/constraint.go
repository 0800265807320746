package api

// Constraint operands beyond the comparison operators (=, !=, <, <=, >, >=).
const (
	ConstraintDistinctHosts     = "distinct_hosts"
	ConstraintDistinctProperty  = "distinct_property"
	ConstraintRegex             = "regexp"
	ConstraintVersion           = "version"
	ConstraintSemver            = "semver"
	ConstraintSetContains       = "set_contains"
	ConstraintSetContainsAll    = "set_contains_all"
	ConstraintSetContainsAny    = "set_contains_any"
	ConstraintAttributeIsSet    = "is_set"
	ConstraintAttributeIsNotSet = "is_not_set"
)

// DefaultAffinityWeight is the weight an affinity gets when the job does not
// give one.
const DefaultAffinityWeight int8 = 50

// Constraint restricts the nodes a job, group or task may be placed on. The
// Go names are upstream's wire names; the job file calls them attribute
// (LTarget), operator (Operand) and value (RTarget).
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// NewConstraint returns a constraint "left operand right".
func NewConstraint(left, operand, right string) *Constraint {
	return &Constraint{LTarget: left, RTarget: right, Operand: operand}
}

// Affinity expresses a soft placement preference; Weight (-100..100) says how
// strongly. It is a pointer so that "unset" canonicalizes to the default
// while an explicit 0 survives.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  *int8
}

// NewAffinity returns an affinity "left operand right" with the given weight.
func NewAffinity(left, operand, right string, weight int8) *Affinity {
	return &Affinity{LTarget: left, RTarget: right, Operand: operand, Weight: new(weight)}
}

// Canonicalize fills in the default weight.
func (a *Affinity) Canonicalize() {
	if a.Weight == nil {
		a.Weight = new(DefaultAffinityWeight)
	}
}

// DefaultSpreadWeight is the weight a spread block gets when it sets none.
const DefaultSpreadWeight int8 = 50

// Spread spreads a group's allocations over the values of Attribute:
// evenly, or by the percentages of SpreadTarget.
type Spread struct {
	Attribute    string
	Weight       *int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is the share (percent) of allocations for one value.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// NewSpread returns a spread over attribute with the given weight and targets.
func NewSpread(attribute string, weight int8, targets []*SpreadTarget) *Spread {
	return &Spread{Attribute: attribute, Weight: new(weight), SpreadTarget: targets}
}

// Canonicalize fills in the default weight.
func (s *Spread) Canonicalize() {
	if s.Weight == nil {
		s.Weight = new(DefaultSpreadWeight)
	}
}
