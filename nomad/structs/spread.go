package structs

// DefaultSpreadWeight is the weight of a spread block that sets none, as
// upstream.
const DefaultSpreadWeight = 50

// Spread asks the scheduler to spread a group's allocations over the
// values of a node attribute: evenly, or by the percentages of its
// targets.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is the share of allocations one attribute value should get.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// Validate checks the attribute, the weight and the targets, naming every
// problem at once.
func (s *Spread) Validate() error {
	var p problems
	if s.Attribute == "" {
		p.add("Missing spread attribute")
	}
	if s.Weight <= 0 || s.Weight > 100 {
		p.add("Spread block must have a positive weight from 0 to 100; got %d", s.Weight)
	}
	seen := map[string]bool{}
	sum := 0
	for _, t := range s.SpreadTarget {
		if t.Value == "" {
			p.add("Spread target value must not be empty")
		} else if seen[t.Value] {
			p.add("Spread target value %q already defined", t.Value)
		}
		seen[t.Value] = true
		if t.Percent > 100 {
			p.add("Spread target percentage for value %q must be between 0 and 100", t.Value)
		}
		sum += int(t.Percent)
	}
	if sum > 100 {
		p.add("Sum of spread target percentages must not be greater than 100%%; got %d%%", sum)
	}
	return p.err()
}

func copySpreads(in []*Spread) []*Spread {
	if in == nil {
		return nil
	}
	out := make([]*Spread, len(in))
	for i, s := range in {
		c := *s
		if s.SpreadTarget != nil {
			c.SpreadTarget = make([]*SpreadTarget, len(s.SpreadTarget))
			for j, t := range s.SpreadTarget {
				tt := *t
				c.SpreadTarget[j] = &tt
			}
		}
		out[i] = &c
	}
	return out
}
