package removal

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ErrMountPoint is wrapped by every MountError.
var ErrMountPoint = errors.New("another filesystem is mounted there")

// A MountError reports a directory under a root that is on another device
// than the root: a mount point, which removal neither removes nor
// descends into. Its ancestors under the root stay too.
type MountError struct {
	Root string // the root as given
	Path string // the directory's path relative to Root, as it was when found
}

// Error names the directory and the rule.
func (e *MountError) Error() string {
	return fmt.Sprintf("dirlife: refusing to remove %s: it is on another filesystem than the root (a mount point)", filepath.Join(e.Root, filepath.FromSlash(e.Path)))
}

// Unwrap returns ErrMountPoint.
func (e *MountError) Unwrap() error { return ErrMountPoint }

// ErrRemovalStalled is wrapped by every StalledError.
var ErrRemovalStalled = errors.New("removal still running past its deadline")

// A StalledError reports removals still running, or still waiting for
// one of the process's removal goroutines, when the call that waited for
// them reached its deadline; dirlife documents it where it names the
// type.
type StalledError struct {
	Root     string         // the root as given
	Deadline time.Duration  // the deadline that passed
	Entries  []StalledEntry // what is left, in the order the call set it aside, then what it found under way
}

// A StalledEntry is one entry of Root whose removal is still running.
type StalledEntry struct {
	Name  string // its name when it was set aside: an ID's directory ("gen-4"), a staging directory, a moved-aside copy
	Aside string // its name in Root now, where it is being removed
}

// Error names the root, the deadline and every entry left.
func (e *StalledError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dirlife: removal in %s still running after %v:", e.Root, e.Deadline)
	for i, en := range e.Entries {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s", en.Name)
		if en.Aside != en.Name {
			fmt.Fprintf(&b, " (now %s)", en.Aside)
		}
	}
	b.WriteString("; it goes on in the background")
	return b.String()
}

// Unwrap returns ErrRemovalStalled.
func (e *StalledError) Unwrap() error { return ErrRemovalStalled }
