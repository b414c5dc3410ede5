package dirlife

import "golang.org/x/sys/unix"

// errExchangeRefused is what renameat2 returns where the filesystem has no
// RENAME_EXCHANGE: a fault that forces the move-aside fallback.
var errExchangeRefused error = unix.EINVAL
