//go:build !linux

package dirlife

import (
	"errors"
	"os"
)

const haveSyncfs = false

func syncfs(*os.File) error { return errors.New("syncfs is not available on this system") }
