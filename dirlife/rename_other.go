//go:build !linux

package dirlife

import (
	"errors"
	"io/fs"
	"os"
)

// errNoExchange stands for the missing renameat2 on this system: every
// rewrite takes the move-aside path, and a new directory is renamed into
// place after a check that the target is absent.
var errNoExchange = errors.New("renameat2 is not available on this system")

func exchange(dir *os.File, a, b string) error        { return errNoExchange }
func renameNoReplace(dir *os.File, a, b string) error { return errNoExchange }

func unsupported(err error) bool { return errors.Is(err, errNoExchange) }

func exists(err error) bool { return errors.Is(err, fs.ErrExist) }
