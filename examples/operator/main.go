package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"leasekit.dev/platform/isolate"
)

func main() {
	// The kernel's workers are this executable started again.
	isolate.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
