package isolate_test

import (
	"context"
	"errors"
	"testing"

	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// BenchmarkCall is a call through a warm worker that the worker refuses
// before it reads or evaluates anything (a render without a platform):
// what the pool and its protocol cost a call, beside the evaluation.
func BenchmarkCall(b *testing.B) {
	ws := &isolate.Workers{Size: 1}
	defer ws.Close()
	ctx := context.Background()
	in := kernel.RenderInput{Instance: kernel.Instance{Files: moduletest.Instance(`name: "shop"`)}}
	call := func() {
		_, err := ws.Render(ctx, in)
		var we *isolate.WorkerError
		if err == nil || errors.As(err, &we) {
			b.Fatalf("%v, want the kernel's refusal", err)
		}
	}
	call()
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
}
