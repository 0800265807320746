package agent

import (
	"testing"

	"github.com/shoenig/test/must"
)

// Paths are rooted at the allocation directory; anything that could climb
// out of it is refused before the disk is touched.
func TestAllocPath(t *testing.T) {
	for in, want := range map[string]string{
		"": ".", "/": ".", "alloc/logs": "alloc/logs", "/alloc/logs/": "alloc/logs",
		"web/./local": "web/local", "/etc/passwd": "etc/passwd",
	} {
		got, err := allocPath(in)
		must.NoError(t, err, must.Sprintf("%q", in))
		must.Eq(t, want, got, must.Sprintf("%q", in))
	}
	for _, in := range []string{"..", "../x", "web/../../x", "a/..", "x\x00y"} {
		_, err := allocPath(in)
		must.ErrorContains(t, err, "Invalid path", must.Sprintf("%q", in))
	}
}

// origin and offset point across rotated files as upstream's: from the
// start they skip whole files, from the end they count back.
func TestLogStart(t *testing.T) {
	files := []logFile{{index: 3, size: 10}, {index: 4, size: 10}, {index: 5, size: 4}}
	for _, tc := range []struct {
		origin  string
		offset  int64
		pos     int
		fileOff int64
	}{
		{"start", 0, 0, 0},
		{"start", 12, 1, 2},
		{"start", 100, 2, 4}, // past the end: the end
		{"end", 0, 2, 4},
		{"end", 4, 2, 0},
		{"end", 6, 1, 8},
		{"end", 100, 0, 0}, // more than there is: the start
	} {
		pos, off := logStart(files, tc.origin, tc.offset)
		must.Eq(t, tc.pos, pos, must.Sprintf("%+v", tc))
		must.Eq(t, tc.fileOff, off, must.Sprintf("%+v", tc))
	}
	pos, off := logStart(nil, "end", 5)
	must.Eq(t, 0, pos)
	must.Eq(t, 0, off)
}
