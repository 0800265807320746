package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

func testMeta(state string) *raft.SnapshotMeta {
	return &raft.SnapshotMeta{Version: 1, ID: "2-10-1", Index: 10, Term: 2, Size: int64(len(state)), ConfigurationIndex: 1}
}

func writeArchive(t *testing.T, state string) []byte {
	t.Helper()
	var buf bytes.Buffer
	must.NoError(t, Write(&buf, testMeta(state), strings.NewReader(state)))
	return buf.Bytes()
}

// TestArchive_RoundTrip checks that what Write writes Read gives back, metadata
// and state, as the restore of a saved snapshot needs.
func TestArchive_RoundTrip(t *testing.T) {
	state := strings.Repeat("\x00state", 10_000)
	a, err := Read(bytes.NewReader(writeArchive(t, state)), t.TempDir())
	must.NoError(t, err)
	defer a.Close()
	must.Eq(t, *testMeta(state), a.Meta)
	got, err := io.ReadAll(a.State)
	must.NoError(t, err)
	must.EqOp(t, state, string(got))
}

// TestArchive_Layout checks the members, their order and modes against what
// upstream's files hold, so upstream's tools read ours.
func TestArchive_Layout(t *testing.T) {
	gz, err := gzip.NewReader(bytes.NewReader(writeArchive(t, "abc")))
	must.NoError(t, err)
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must.NoError(t, err)
		must.EqOp(t, int64(0o600), hdr.Mode)
		names = append(names, hdr.Name)
		if hdr.Name == sumsFile {
			b, _ := io.ReadAll(tr)
			must.StrHasSuffix(t, "  state.bin\n", strings.Split(string(b), "\n")[0]+"\n")
		}
	}
	must.Eq(t, []string{"meta.json", "state.bin", "SHA256SUMS"}, names)
}

// TestArchive_ReadsUpstreamFile checks that a file upstream Nomad 1.6.5 wrote
// passes Read's checks and yields its metadata.
func TestArchive_ReadsUpstreamFile(t *testing.T) {
	f, err := os.Open("testdata/upstream-1.6.5.snap")
	must.NoError(t, err)
	defer f.Close()
	a, err := Read(f, t.TempDir())
	must.NoError(t, err)
	defer a.Close()
	must.EqOp(t, uint64(10), a.Meta.Index)
	must.EqOp(t, "2-10-1796233225343", a.Meta.ID)
	var first [1]byte
	_, err = a.State.Read(first[:])
	must.NoError(t, err)
	must.EqOp(t, byte(0x80), first[0])
}

// TestArchive_RefusesDamage checks that truncated, garbled or tampered files
// are refused with ErrCorrupt and leave no spooled file: restore must learn
// before it starts that the file is bad.
func TestArchive_RefusesDamage(t *testing.T) {
	good := writeArchive(t, strings.Repeat("state", 1000))
	tampered := rewriteMember(t, good, stateFile, func(b []byte) []byte { b[3] ^= 1; return b })
	noSums := rewriteMember(t, good, sumsFile, nil)
	cases := map[string][]byte{
		"empty":        nil,
		"garbage":      []byte("not a snapshot\n"),
		"truncated":    good[:len(good)/2],
		"trailer cut":  good[:len(good)-4],
		"tampered":     tampered,
		"no checksums": noSums,
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Read(bytes.NewReader(b), dir)
			must.ErrorIs(t, err, ErrCorrupt)
			left, _ := os.ReadDir(dir)
			must.SliceEmpty(t, left)
		})
	}
}

// rewriteMember rebuilds an archive with one member's content changed, or
// dropped when change is nil.
func rewriteMember(t *testing.T, archive []byte, name string, change func([]byte) []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	must.NoError(t, err)
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must.NoError(t, err)
		b, err := io.ReadAll(tr)
		must.NoError(t, err)
		if hdr.Name == name {
			if change == nil {
				continue
			}
			b = change(b)
		}
		hdr.Size = int64(len(b))
		must.NoError(t, tw.WriteHeader(hdr))
		_, err = tw.Write(b)
		must.NoError(t, err)
	}
	must.NoError(t, tw.Close())
	must.NoError(t, gw.Close())
	return out.Bytes()
}
