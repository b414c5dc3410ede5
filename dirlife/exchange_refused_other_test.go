//go:build !linux

package dirlife

// errExchangeRefused is what exchange returns on systems without
// renameat2: a fault that forces the move-aside fallback.
var errExchangeRefused error = errNoExchange
