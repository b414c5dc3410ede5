package dirlife

import "golang.org/x/sys/unix"

// errNoAttr is what fgetxattr(2) returns for an attribute a file lacks.
const errNoAttr = unix.ENODATA
