//go:build unix

package modread

import (
	"os"
	"syscall"
)

// openFlags opens a file for reading without blocking: opening a named
// pipe that has no writer returns at once, and the kernel then refuses it
// as irregular without reading it.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
