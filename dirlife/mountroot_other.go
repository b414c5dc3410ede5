//go:build !linux

package dirlife

import "os"

// isMountRoot reports false: where no system call tells a mount's root
// apart, the device check alone applies (see removeTree).
func isMountRoot(*os.File) (bool, error) { return false, nil }
