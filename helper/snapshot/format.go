package snapshot

import (
	"bufio"
	"errors"
	"io"
)

// Format is who wrote a state.bin, as far as its first byte tells.
type Format int

// Formats.
const (
	FormatUnknown Format = iota
	// FormatOurs: our FSM's persist stream, whose first msgpack value is a
	// state.SnapshotKind, a positive fixint (0x00-0x7f).
	FormatOurs
	// FormatUpstream: upstream Nomad's, which opens with an empty msgpack
	// map (0x80).
	FormatUpstream
)

// String names the format, as inspect shows it.
func (f Format) String() string {
	switch f {
	case FormatOurs:
		return "nomad-edge"
	case FormatUpstream:
		return "upstream nomad"
	}
	return "unknown"
}

// Sniff peeks at the first byte of state.bin, consuming nothing.
func Sniff(br *bufio.Reader) (Format, error) {
	b, err := br.Peek(1)
	if errors.Is(err, io.EOF) {
		return FormatUnknown, nil
	}
	if err != nil {
		return FormatUnknown, err
	}
	switch {
	case b[0] <= 0x7f:
		return FormatOurs, nil
	case b[0] == 0x80:
		return FormatUpstream, nil
	}
	return FormatUnknown, nil
}
