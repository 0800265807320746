package nesting

import "fmt"

// DepthError is input nested deeper than Max; Offset is the byte at
// which the nesting crossed it.
type DepthError struct {
	Max    int
	Offset int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("nesting deeper than %d levels at byte %d", e.Max, e.Offset)
}

// CheckJSON returns a *DepthError when the JSON in data nests objects and
// arrays deeper than max. It is one pass that allocates nothing and
// knows only strings (where brackets are text); malformed JSON is left
// for the decoder to report.
func CheckJSON(data []byte, max int) error {
	depth := 0
	inString, escaped := false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return &DepthError{Max: max, Offset: i}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
