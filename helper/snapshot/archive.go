package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// The archive's members, in the order Write writes them.
const (
	metaFile  = "meta.json"
	stateFile = "state.bin"
	sumsFile  = "SHA256SUMS"
)

// Bounds on the small members, so a hostile file cannot make Read hold
// much in memory: state.bin alone may be large, and it goes to disk.
const (
	maxMetaSize = 1 << 20
	maxSumsSize = 4 << 10
)

// ErrCorrupt is wrapped by every error Read returns for a file that is not
// a whole, intact snapshot archive: truncated, garbled, a member missing or
// a checksum that does not match.
var ErrCorrupt = errors.New("snapshot file is corrupt or truncated")

// Write writes the archive of one raft snapshot to w: meta's JSON, then
// meta.Size bytes of state read from state, then the checksums. It fails,
// having written a partial archive, when state holds other than meta.Size
// bytes.
func Write(w io.Writer, meta *raft.SnapshotMeta, state io.Reader) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encoding snapshot metadata: %w", err)
	}
	var sums []string
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(r, size))
		if err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if n != size {
			return fmt.Errorf("writing %s: got %d bytes, expected %d", name, n, size)
		}
		sums = append(sums, fmt.Sprintf("%x  %s\n", h.Sum(nil), name))
		return nil
	}
	if err := add(metaFile, int64(len(metaJSON)), strings.NewReader(string(metaJSON))); err != nil {
		return err
	}
	if err := add(stateFile, meta.Size, state); err != nil {
		return err
	}
	// Upstream lists state.bin first.
	sumsText := sums[1] + sums[0]
	if err := tw.WriteHeader(&tar.Header{Name: sumsFile, Mode: 0o600, Size: int64(len(sumsText)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
		return fmt.Errorf("writing %s: %w", sumsFile, err)
	}
	if _, err := io.WriteString(tw, sumsText); err != nil {
		return fmt.Errorf("writing %s: %w", sumsFile, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Archive is a verified snapshot archive: its metadata and its state,
// spooled to a temporary file. Close removes the file.
type Archive struct {
	Meta raft.SnapshotMeta
	// State reads state.bin from its start; it holds Meta.Size bytes.
	State *os.File
}

// Close removes the spooled state.
func (a *Archive) Close() error {
	err := a.State.Close()
	if rerr := os.Remove(a.State.Name()); err == nil {
		err = rerr
	}
	return err
}

// Read reads a whole archive from r, spooling state.bin into a temporary
// file in dir (os.TempDir when ""), and verifies every member against
// SHA256SUMS and state.bin's size against the metadata. Any failure to do
// so wraps ErrCorrupt and leaves no file behind.
func Read(r io.Reader, dir string) (*Archive, error) {
	spool, err := os.CreateTemp(dir, "snapshot-*.bin")
	if err != nil {
		return nil, fmt.Errorf("spooling the snapshot: %w", err)
	}
	a := &Archive{State: spool}
	if err := a.read(r); err != nil {
		_ = a.Close()
		return nil, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		_ = a.Close()
		return nil, err
	}
	return a, nil
}

func (a *Archive) read(r io.Reader) error {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return corrupt("decompressing: %v", err)
	}
	tr := tar.NewReader(gz)
	got := map[string]hash.Hash{}
	var metaJSON []byte
	var sums map[string]string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return corrupt("reading the archive: %v", err)
		}
		if got[hdr.Name] != nil || (hdr.Name == sumsFile && sums != nil) {
			return corrupt("%s appears twice", hdr.Name)
		}
		h := sha256.New()
		switch hdr.Name {
		case metaFile:
			if metaJSON, err = readSmall(tr, h, maxMetaSize); err != nil {
				return corrupt("reading %s: %v", metaFile, err)
			}
		case stateFile:
			if _, err := io.Copy(io.MultiWriter(a.State, h), tr); err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return corrupt("reading %s: %v", stateFile, err)
				}
				return fmt.Errorf("spooling %s: %w", stateFile, err)
			}
		case sumsFile:
			text, err := readSmall(tr, nil, maxSumsSize)
			if err != nil {
				return corrupt("reading %s: %v", sumsFile, err)
			}
			if sums, err = parseSums(text); err != nil {
				return err
			}
			continue
		default:
			return corrupt("unexpected member %q", hdr.Name)
		}
		got[hdr.Name] = h
	}
	// The gzip trailer carries a CRC of everything: read to it.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return corrupt("decompressing: %v", err)
	}
	if sums == nil {
		return corrupt("no %s", sumsFile)
	}
	for _, name := range []string{metaFile, stateFile} {
		h, ok := got[name]
		if !ok {
			return corrupt("no %s", name)
		}
		if want, ok := sums[name]; !ok || want != hex.EncodeToString(h.Sum(nil)) {
			return corrupt("%s does not match its checksum in %s", name, sumsFile)
		}
	}
	if err := json.Unmarshal(metaJSON, &a.Meta); err != nil {
		return corrupt("decoding %s: %v", metaFile, err)
	}
	st, err := a.State.Stat()
	if err != nil {
		return err
	}
	if st.Size() != a.Meta.Size {
		return corrupt("%s holds %d bytes, %s says %d", stateFile, st.Size(), metaFile, a.Meta.Size)
	}
	return nil
}

// readSmall reads a member that must fit in limit bytes.
func readSmall(r io.Reader, h hash.Hash, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	if h != nil {
		h.Write(b)
	}
	return b, nil
}

// parseSums reads sha256sum(1) lines: "<hex>  <name>".
func parseSums(text []byte) (map[string]string, error) {
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(string(text), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != sha256.Size*2 {
			return nil, corrupt("malformed line in %s: %q", sumsFile, line)
		}
		sums[name] = sum
	}
	return sums, nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
