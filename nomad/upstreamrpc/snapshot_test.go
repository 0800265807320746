package upstreamrpc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// snapshotFixture is the state.bin of a real upstream 1.6.5 snapshot
// (testdata/README.md says what it holds).
func snapshotFixture(t *testing.T) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(fixture(t, "snapshot-state.bin.gz")))
	must.NoError(t, err)
	b, err := io.ReadAll(zr)
	must.NoError(t, err)
	return b
}

// TestReadSnapshotStateCarriesUpstreamsObjects checks that a snapshot an
// upstream 1.6.5 server wrote decodes into our model with every object's
// IDs, indexes, statuses and secrets as upstream's API showed them when
// it was taken: an upgrade that lost any of them would orphan
// allocations, re-place work or lock operators out.
func TestReadSnapshotStateCarriesUpstreamsObjects(t *testing.T) {
	raw := snapshotFixture(t)
	must.True(t, IsUpstreamState(raw))
	s, err := ReadSnapshotState(bytes.NewReader(raw))
	must.NoError(t, err)

	must.Eq(t, uint64(79), s.Index)
	must.Eq(t, uint64(79), s.Indexes["allocs"])
	must.Eq(t, []Carried{
		{"Node", 1},
		{"Job", 5}, // web, once, tick, its one launch, svc
		{"JobVersion", 7},
		{"JobSummary", 5},
		{"Evaluation", 10},
		{"Allocation", 6},
		{"Deployment", 4},
		{"Namespace", 2},
		{"NodePool", 3}, // all, default, edge
		{"ACLPolicy", 1},
		{"ACLToken", 2},
		{"ScalingPolicy", 1},
		{"ScalingEvents", 1},
		{"ServiceRegistration", 1},
		{"SchedulerConfig", 1},
	}, s.Carried())
	must.Eq(t, "binpack", s.SchedulerConfig.SchedulerAlgorithm)

	n := s.Nodes[0]
	must.Eq(t, "29d8d1cb-7d4d-9dcc-77db-14f2dda552e7", n.ID)
	must.Eq(t, "428bcbfb-cc96-5094-83d5-b583d1fc7bdb", n.SecretID, must.Sprint("the client's secret-id file"))
	must.Eq(t, structs.NodeStatusReady, n.Status)
	must.Eq(t, uint64(8), n.CreateIndex)
	must.Eq(t, uint64(10), n.ModifyIndex)
	must.Eq(t, "true", n.Attributes[AttrUpstream], must.Sprint("the version gate judges its client by upstream's numbering"))
	must.Eq(t, "1.6.5", n.Attributes["nomad.version"])

	// web has three versions: meta v=1, then v=2, then scaled to 2.
	var versions []*structs.Job
	for _, j := range s.JobVersions {
		if j.ID == "web" {
			versions = append(versions, j)
		}
	}
	sort.Slice(versions, func(i, k int) bool { return versions[i].Version < versions[k].Version })
	must.Len(t, 3, versions)
	must.Eq(t, "1", versions[0].Meta["v"])
	must.Eq(t, "2", versions[1].Meta["v"])
	must.Eq(t, 2, versions[2].TaskGroups[0].Count)
	must.Eq(t, []uint64{24, 33, 58}, []uint64{versions[0].JobModifyIndex, versions[1].JobModifyIndex, versions[2].JobModifyIndex})
	var web *structs.Job
	for _, j := range s.Jobs {
		if j.ID == "web" {
			web = j
		}
	}
	must.NotNil(t, web)
	must.Eq(t, uint64(2), web.Version)
	must.Eq(t, uint64(58), web.JobModifyIndex)

	// The job's scaling policy takes the indexes of upstream's policy
	// table, which its copy in the job lacks.
	p := s.ScalingPolicies[0]
	must.Eq(t, p.ID, web.TaskGroups[0].Scaling.ID)
	must.Positive(t, p.CreateIndex)
	must.Eq(t, p.CreateIndex, web.TaskGroups[0].Scaling.CreateIndex)
	must.Eq(t, p.ModifyIndex, web.TaskGroups[0].Scaling.ModifyIndex)

	var a *structs.Allocation
	for _, x := range s.Allocs {
		if x.ID == "0684a986-f668-4c2a-f0b2-49bcfb8aba0f" {
			a = x
		}
	}
	must.NotNil(t, a)
	must.Eq(t, "af470262-6957-4e13-5ae6-b76430e5edf2", a.EvalID)
	must.Eq(t, n.ID, a.NodeID)
	must.Eq(t, "47bdcf97-0633-bc46-db62-20de5f01ac9e", a.DeploymentID)
	must.Eq(t, uint64(34), a.CreateIndex)
	must.Eq(t, uint64(65), a.ModifyIndex)
	must.Eq(t, uint64(61), a.AllocModifyIndex)
	must.Eq(t, structs.AllocClientStatusRunning, a.ClientStatus)
	must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
	must.Eq(t, int64(1796232781799168745), a.CreateTime)
	must.NotNil(t, a.Job)
	must.Eq(t, uint64(2), a.Job.Version)
	must.Eq(t, "running", a.TaskStates["t"].State)
	must.False(t, a.TaskStates["t"].StartedAt.IsZero(), must.Sprint("upstream's binary times decode"))

	var reader *structs.ACLToken
	for _, tok := range s.ACLTokens {
		if tok.Name == "reader" {
			reader = tok
		}
	}
	must.NotNil(t, reader)
	must.Eq(t, "c40333b1-a5fa-3748-671b-4c899a9d1656", reader.AccessorID)
	must.Eq(t, "ac7b1614-4682-24e0-57ef-408231a7498c", reader.SecretID)
	must.Eq(t, []string{"readonly"}, reader.Policies)
	must.Eq(t, uint64(15), reader.CreateIndex)
	must.Eq(t, "2026-12-02T17:26:46.042669793Z", reader.CreateTime.UTC().Format(time.RFC3339Nano))

	got := map[string]int{}
	for _, nc := range s.NotCarried {
		must.NotEq(t, "", nc.Reason, must.Sprint(nc.Kind))
		got[nc.Kind] = nc.Count
	}
	must.Eq(t, map[string]int{
		"TimeTable": 1, "PeriodicLaunch": 1, "ClusterMetadata": 1,
		"Variable": 2, "VariablesQuota": 2, "RootKeyMeta": 1,
		"ACLRole": 1, "ACLAuthMethod": 1, "ACLBindingRule": 1,
	}, got)
}

// TestSnapshotRecordsKeepUpstreamsFields checks which fields of each
// record kind our model does not carry: exactly those listed in
// testdata/snapshot-state.dropped (legacy resources, Consul and Vault
// fields, upstream's hashes). A field of ours renamed or removed shows up
// here before a restored cluster misses it.
func TestSnapshotRecordsKeepUpstreamsFields(t *testing.T) {
	raw := snapshotFixture(t)
	br := bytesReader(raw)
	var buf bytes.Buffer
	must.NoError(t, readObject(br, &buf))
	dropped := map[string]bool{}
	for {
		typ, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		must.NoError(t, err)
		buf.Reset()
		must.NoError(t, readObject(br, &buf))
		k := recordKinds[typ]
		if k.carry == nil || k.name == "Index" || k.name == "SchedulerConfig" {
			continue
		}
		tr := newTranslation()
		must.NoError(t, k.carry(tr, buf.Bytes()))
		obj := carriedObject(t, tr.state)
		var out []byte
		must.NoError(t, codec.NewEncoderBytes(&out, Handle).Encode(obj))
		theirs, kept := fieldPaths(t, buf.Bytes()), fieldPaths(t, out)
		for p := range theirs {
			if !kept[p] {
				dropped[k.name+p] = true
			}
		}
	}
	var list []string
	for p := range dropped {
		list = append(list, p)
	}
	sort.Strings(list)
	want := strings.Fields(string(fixture(t, "snapshot-state.dropped")))
	must.Eq(t, want, list, must.Sprintf("fields of upstream's snapshot that we drop changed; the list is:\n%s", strings.Join(list, "\n")))
}

// carriedObject is the one object a translation of one record holds.
func carriedObject(t *testing.T, s *SnapshotState) any {
	t.Helper()
	var objs []any
	add := func(n int, get func(int) any) {
		for i := range n {
			objs = append(objs, get(i))
		}
	}
	add(len(s.Nodes), func(i int) any { return s.Nodes[i] })
	add(len(s.Jobs), func(i int) any { return s.Jobs[i] })
	add(len(s.JobVersions), func(i int) any { return s.JobVersions[i] })
	add(len(s.JobSummaries), func(i int) any { return s.JobSummaries[i] })
	add(len(s.Evals), func(i int) any { return s.Evals[i] })
	add(len(s.Allocs), func(i int) any { return s.Allocs[i] })
	add(len(s.Deployments), func(i int) any { return s.Deployments[i] })
	add(len(s.Namespaces), func(i int) any { return s.Namespaces[i] })
	add(len(s.NodePools), func(i int) any { return s.NodePools[i] })
	add(len(s.ACLPolicies), func(i int) any { return s.ACLPolicies[i] })
	add(len(s.ACLTokens), func(i int) any { return s.ACLTokens[i] })
	add(len(s.ScalingPolicies), func(i int) any { return s.ScalingPolicies[i] })
	add(len(s.ScalingEvents), func(i int) any { return s.ScalingEvents[i] })
	add(len(s.ServiceRegistrations), func(i int) any { return s.ServiceRegistrations[i] })
	must.Len(t, 1, objs)
	return objs[0]
}

// TestReadSnapshotStateSkipsUnknownRecords checks that a record of a type
// byte we do not know is skipped and reported, not fatal: a snapshot from
// a cluster using a feature we never observed still restores the rest.
func TestReadSnapshotStateSkipsUnknownRecords(t *testing.T) {
	raw := snapshotFixture(t)
	var extra []byte
	must.NoError(t, codec.NewEncoderBytes(&extra, Handle).Encode(map[string]any{"ID": "vol1", "Nested": []any{map[string]any{"A": 1}}}))
	stream := append(append(append([]byte{}, raw...), 18), extra...)
	s, err := ReadSnapshotState(bytes.NewReader(stream))
	must.NoError(t, err)
	must.Len(t, 6, s.Allocs)
	last := s.NotCarried[len(s.NotCarried)-1]
	must.Eq(t, NotCarried{Kind: "type byte 18", Count: 1, Reason: reasonUnknown}, last)
}

// TestReadSnapshotStateRefusesBadInput checks that a stream that is not
// upstream's, cut short, corrupt, or with a length prefix far beyond its
// bytes fails with an error naming the record and its type byte, and
// without allocating what the prefix claims: an operator restoring a
// damaged file learns where it is damaged, and a server never runs out of
// memory reading it.
func TestReadSnapshotStateRefusesBadInput(t *testing.T) {
	raw := snapshotFixture(t)
	// The first node record is record 25 (the header, the time table, 23
	// index entries come before it).
	nodeAt := recordOffset(t, raw, 25)
	must.Eq(t, byte(0), raw[nodeAt])

	huge := append(append([]byte{}, raw[:nodeAt]...), 0, 0xdb, 0xff, 0xff, 0xff, 0xf0, 'x')
	cases := []struct {
		name   string
		stream []byte
		want   string
	}{
		{"empty", nil, "does not open"},
		{"ours", []byte{0x81, 0xa1, 'a', 0x01}, "does not open"},
		{"truncated node", raw[:nodeAt+200], "record 25 (type byte 0, Node): unexpected EOF"},
		{"not msgpack", append(append([]byte{}, raw[:nodeAt]...), 0, 0xc1), "record 25 (type byte 0, Node): byte 0xc1 is not a msgpack value"},
		{"huge string", huge, "record 25 (type byte 0, Node): a value of 4294967280 bytes exceeds"},
		{"wrong shape", append(append([]byte{}, raw[:nodeAt]...), 0, 0x93, 1, 2, 3), "record 25 (type byte 0, Node): decoding"},
		{"no ID", append(append([]byte{}, raw[:nodeAt]...), 0, 0x81, 0xa4, 'N', 'a', 'm', 'e', 0xa1, 'n'), "record 25 (type byte 0, Node): the record names no ID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSnapshotState(bytes.NewReader(tc.stream))
			must.Nil(t, s)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

// recordOffset is where record n (1 is the first after the header)
// begins: its type byte.
func recordOffset(t *testing.T, raw []byte, n int) int {
	t.Helper()
	br := bytesReader(raw)
	var buf bytes.Buffer
	must.NoError(t, readObject(br, &buf))
	off := buf.Len()
	for i := 1; i < n; i++ {
		_, err := br.ReadByte()
		must.NoError(t, err)
		buf.Reset()
		must.NoError(t, readObject(br, &buf))
		off += 1 + buf.Len()
	}
	return off
}

func bytesReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// upstreamStateStream is an upstream state stream of the header and records,
// each a type byte and an object encoded with upstream's settings.
func upstreamStateStream(t *testing.T, records ...any) []byte {
	t.Helper()
	out := []byte{0x80}
	for i := 0; i < len(records); i += 2 {
		var b []byte
		must.NoError(t, codec.NewEncoderBytes(&b, Handle).Encode(records[i+1]))
		out = append(append(out, records[i].(byte)), b...)
	}
	return out
}

// TestReadSnapshotStateReportsTokenRoles checks that a token naming ACL
// roles is carried with its policies and counted in the report: ours has
// no roles, and an operator must learn before the restore that such a
// token will be able to do less.
func TestReadSnapshotStateReportsTokenRoles(t *testing.T) {
	stream := upstreamStateStream(t,
		byte(12), map[string]any{"AccessorID": "a1", "SecretID": "s1", "Type": "client", "Policies": []string{"p"},
			"Roles": []any{map[string]any{"ID": "r1", "Name": "readers"}}},
		byte(12), map[string]any{"AccessorID": "a2", "SecretID": "s2", "Type": "client", "Policies": []string{"p"}},
	)
	s, err := ReadSnapshotState(bytes.NewReader(stream))
	must.NoError(t, err)
	must.Len(t, 2, s.ACLTokens)
	must.Eq(t, "s1", s.ACLTokens[0].SecretID)
	must.Eq(t, []string{"p"}, s.ACLTokens[0].Policies)
	must.Eq(t, []NotCarried{{Kind: "ACLToken.Roles", Count: 1, Reason: reasonTokenRoles}}, s.NotCarried)
}

// TestReadSnapshotStateAllocatesWhatArrives checks that lengths a record
// claims cost memory only as far as the bytes that follow them: a string
// claiming 60 MiB (under the record limit) and a map claiming 4 billion
// entries, each followed by a few bytes, fail at their end having
// allocated far less than a MiB.
func TestReadSnapshotStateAllocatesWhatArrives(t *testing.T) {
	for name, record := range map[string][]byte{
		"string": {0xdb, 0x03, 0xc0, 0x00, 0x00, 'a', 'b'},
		"map":    {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k', 0x01},
	} {
		t.Run(name, func(t *testing.T) {
			stream := append([]byte{0x80, 0}, record...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ReadSnapshotState(bytes.NewReader(stream))
			runtime.ReadMemStats(&after)
			must.ErrorContains(t, err, "record 1 (type byte 0, Node): unexpected EOF")
			must.Less(t, uint64(1<<20), after.TotalAlloc-before.TotalAlloc)
		})
	}
}
