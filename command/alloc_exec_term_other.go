//go:build !linux

package command

import (
	"errors"
	"io"
)

var errNoTerminal = errors.New("terminal control is implemented on Linux only")

func isTerminal(io.Reader) bool { return false }

func termSize() (rows, cols int, err error) { return 0, 0, errNoTerminal }

func makeRaw(int) (func(), error) { return nil, errNoTerminal }
