package agent

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// The table of refused upstream keys in agent-configuration.md is the
// refusal maps: a key the parser starts to honour leaves the table, and a
// key it refuses is in it (the table had kept job_max_count and
// client_introduction long after they were honoured).
func TestDocs_RefusedKeysTableIsTheParsers(t *testing.T) {
	buf, err := os.ReadFile("../../website/content/docs/agent-configuration.md")
	must.NoError(t, err)
	doc := string(buf)
	start := strings.Index(doc, "## Upstream keys this version refuses")
	must.Positive(t, start, must.Sprint("the section is gone"))
	rows := map[string][]string{}
	row := regexp.MustCompile("^\\| (top level|`[a-z_.]+`) \\| (.*) \\|$")
	key := regexp.MustCompile("`([a-z0-9_*]+)`")
	for _, line := range strings.Split(doc[start:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var keys []string
		for _, k := range key.FindAllStringSubmatch(m[2], -1) {
			keys = append(keys, k[1])
		}
		rows[strings.Trim(m[1], "`")] = keys
	}
	for block, refused := range map[string]map[string]string{
		"top level": unsupportedTopLevel,
		"server":    unsupportedServer,
		"tls":       unsupportedTLS,
		"acl":       unsupportedACL,
		"client":    unsupportedClient,
	} {
		var want []string
		for k := range refused {
			want = append(want, k)
		}
		slices.Sort(want)
		got := slices.Clone(rows[block])
		slices.Sort(got)
		must.Eq(t, want, got, must.Sprintf("the %s row of agent-configuration.md's refused keys", block))
	}
}
