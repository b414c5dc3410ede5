//go:build !unix

package dirlife

import (
	"errors"
	"io/fs"
	"os"
)

var errNoLinks = errors.New("dirlife: hard links of unchanged files need Unix")

func linkAt(*os.File, string, *os.File, string) error { return errNoLinks }

func renameAt(*os.File, string, string) error { return errNoLinks }

func unlinkAt(*os.File, string) error { return errNoLinks }

func isFile(*os.File, string, uint64, int64, fs.FileMode) bool { return false }
