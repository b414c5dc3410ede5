//go:build !unix

package dirlife

import (
	"errors"
	"os"
)

// hardLinks reports whether the system has the hard links Layout.Link
// needs; a write or Verify under Link fails with errNoLinks where not.
const hardLinks = false

var errNoLinks = errors.New("dirlife: Layout.Link needs hard links, which this system lacks: leave Link nil")

func linkAt(*os.File, string, *os.File, string) error { return errNoLinks }

func renameAt(*os.File, string, string) error { return errNoLinks }

func unlinkAt(*os.File, string) error { return errNoLinks }

func statAt(*os.File, string) (fileStamp, bool) { return fileStamp{}, false }

type rawFile int

func openAt(*os.File, string) (rawFile, error) { return -1, errNoLinks }

func (rawFile) Read([]byte) (int, error) { return 0, errNoLinks }

func (rawFile) Close() error { return errNoLinks }

func (rawFile) stamp() (fileStamp, bool) { return fileStamp{}, false }

// fsClock reports false: a walk here trusts no stamp (see [LinkIndex]).
func fsClock(*os.File) (int64, bool) { return 0, false }
