//go:build !linux && !darwin

package dirlife

import (
	"errors"
	"os"
)

// errNoAttr stands for the extended attributes this system does not offer
// the layout: ownership is recorded by the marker file.
var errNoAttr = errors.New("extended attributes are not used on this system")

func getOwnerAttr(*os.File) (bool, error) { return false, errNoAttr }
func setOwnerAttr(*os.File) error         { return errNoAttr }

// attrUnsupported reports whether err says the filesystem holds no
// extended attributes.
func attrUnsupported(err error) bool { return errors.Is(err, errNoAttr) }

func getDigestAttr(*os.File) (Digest, bool, error) { return Digest{}, false, errNoAttr }
func setDigestAttr(*os.File, Digest) error         { return errNoAttr }
