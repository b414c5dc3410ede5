package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"leasekit.dev/platform/kernel"
)

func main() {
	// The kernel's workers are this executable started again.
	kernel.MainWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
