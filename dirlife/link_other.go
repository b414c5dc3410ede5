//go:build !unix

package dirlife

import (
	"errors"
	"io/fs"
	"os"
)

// hardLinks reports whether the system has the hard links Layout.Link
// needs; a write or Verify under Link fails with errNoLinks where not.
const hardLinks = false

var errNoLinks = errors.New("dirlife: Layout.Link needs hard links, which this system lacks: leave Link nil")

func linkAt(*os.File, string, *os.File, string) error { return errNoLinks }

func renameAt(*os.File, string, string) error { return errNoLinks }

func unlinkAt(*os.File, string) error { return errNoLinks }

func isFile(*os.File, string, fileStamp, int64, fs.FileMode) bool { return false }
