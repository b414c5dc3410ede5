//go:build linux || darwin

package dirlife

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// getOwnerAttr reports whether dir carries ownerAttr with ownerValue.
func getOwnerAttr(dir *os.File) (bool, error) {
	buf := make([]byte, len(ownerValue)+1)
	for {
		n, err := unix.Fgetxattr(int(dir.Fd()), ownerAttr, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == errNoAttr || err == unix.ERANGE: // absent, or not our value
			return false, nil
		case err != nil:
			return false, &os.PathError{Op: "fgetxattr", Path: dir.Name(), Err: err}
		}
		return string(buf[:n]) == ownerValue, nil
	}
}

// setOwnerAttr sets ownerAttr on dir.
func setOwnerAttr(dir *os.File) error {
	for {
		err := unix.Fsetxattr(int(dir.Fd()), ownerAttr, []byte(ownerValue), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsetxattr", Path: dir.Name(), Err: err}
		}
		return nil
	}
}

// attrUnsupported reports whether err says the filesystem holds no
// extended attributes (on Linux, of the user namespace on directories).
func attrUnsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}

// getDigestAttr returns the Digest recorded in digestAttr on f, and
// whether f carries one that parses.
func getDigestAttr(f *os.File) (Digest, bool, error) {
	var d Digest
	buf := make([]byte, 2*len(d)+1)
	for {
		n, err := unix.Fgetxattr(int(f.Fd()), digestAttr, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == errNoAttr || err == unix.ERANGE: // absent, or not a digest
			return d, false, nil
		case err != nil:
			return d, false, &os.PathError{Op: "fgetxattr", Path: f.Name(), Err: err}
		}
		d, ok := parseDigest(buf[:n])
		return d, ok, nil
	}
}

// setDigestAttr records d in digestAttr on f.
func setDigestAttr(f *os.File, d Digest) error {
	for {
		err := unix.Fsetxattr(int(f.Fd()), digestAttr, []byte(d.String()), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsetxattr", Path: f.Name(), Err: err}
		}
		return nil
	}
}
