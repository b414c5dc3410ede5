//go:build !linux

package dirlife

import "leasekit.dev/dirlife/internal/sys"

// errExchangeRefused is what the exchange returns on systems without
// renameat2, which it tells without looking at its arguments: a fault
// that forces the move-aside fallback.
var errExchangeRefused = sys.Exchange(nil, "a", "b")
