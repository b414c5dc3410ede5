//go:build darwin

package sys

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// errNoAttr is what fgetxattr(2) returns for an attribute a file lacks.
const errNoAttr = unix.ENOATTR

// errNoExchange stands for the missing renameat2: every rewrite takes the
// move-aside path, and a new directory is renamed into place after a check
// that the target is absent.
var errNoExchange = errors.New("renameat2 is not available on this system")

// Exchange and RenameNoReplace return errNoExchange.
func Exchange(dir *os.File, a, b string) error        { return errNoExchange }
func RenameNoReplace(dir *os.File, a, b string) error { return errNoExchange }

// Unsupported reports whether err says the system lacks a rename asked for.
func Unsupported(err error) bool { return errors.Is(err, errNoExchange) }

// Exists reports whether err says the target exists.
func Exists(err error) bool { return errors.Is(err, fs.ErrExist) }

// HaveSyncfs reports whether Syncfs is available.
const HaveSyncfs = false

// Syncfs fails: there is none.
func Syncfs(*os.File) error { return errors.New("syncfs is not available on this system") }

// IsMountRoot reports false: no system call tells a mount's root apart,
// and the device check alone applies.
func IsMountRoot(*os.File) (bool, error) { return false, nil }
