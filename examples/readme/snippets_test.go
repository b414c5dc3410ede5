package readme

import (
	"context"
	"log/slog"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/slot"
)

// Each function below holds one ```go block of the README, in the
// README's order, between a "// readme:begin" and a "// readme:end" line;
// what stands outside the markers only makes the snippet compile.

// The snippets are compiled, not run; naming them here keeps them in use.
var _ = []any{readmeBoot, readmeReconcile, readmeRender, readmeRenderByHand, readmeForget, readmeGeneric}

// platformCR stands for the Platform resource a reconciler is given.
type platformCR struct{ Generation int64 }

func readmeBoot(ctx context.Context, platformDir string, logger *slog.Logger) error {
	// readme:begin
	pub := platform.NewPublisher(platformDir, platform.PublisherOptions{Logger: logger})
	if err := pub.Boot(); err != nil { // empties platformDir before any reader
		return err
	}
	go func() { // removes a superseded generation as soon as its last lease ends
		if err := pub.Run(ctx); err != nil {
			logger.Error("platform reclaim loop", "err", err)
		}
	}()
	// (or hand pub to a controller-runtime manager: Start is Boot, then Run)
	// readme:end
	return nil
}

func readmeReconcile(ctx context.Context, pub *platform.Publisher, input platformmodule.Input, platformCR platformCR, skew kernel.SkewPolicy) error {
	// readme:begin
	// reconciler: one call per Platform generation, in the only safe order
	files, err := platformmodule.Generate(input)
	if err != nil {
		return err
	}
	rec, err := pub.Publish(ctx, platformCR.Generation, files, skew)
	// stale generations are refused (platform.ErrStale), an identical
	// re-publish is nearly free, a failed build (a *kernel.Error) leaves the
	// current record and directory as they were
	// readme:end
	_ = rec
	return err
}

func readmeRender(ctx context.Context, pub *platform.Publisher, instance kernel.Instance) (kernel.RenderOutput, error) {
	// readme:begin
	// render path: lease, render with the record's skew policy, release
	out, rec, err := pub.Render(ctx, instance)
	// readme:end
	_ = rec
	return out, err
}

func readmeRenderByHand(ctx context.Context, pub *platform.Publisher, instance kernel.Instance) error {
	// readme:begin
	// or by hand, when the render needs the directory for longer
	rec, release, ok := pub.Store().Lease()
	if !ok {
		return platform.ErrNotReady
	}
	defer release()
	out, err := kernel.New().Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: instance, Skew: rec.Skew})
	// readme:end
	_ = out
	return err
}

func readmeForget(pub *platform.Publisher) {
	// readme:begin
	// the Platform resource was deleted
	pub.Forget()
	// readme:end
}

// A recipe is the reconciler and reader the generic recipe builds, which
// readme_test.go runs.
type recipe struct {
	reconcile func(gen int64, files dirlife.Files) error
	read      func(render func(dir string) error) error
}

func readmeGeneric(platformDir string, errStale, errNotReady error, out *recipe) error {
	// readme:begin
	modules := dirlife.Layout[int64]{Root: platformDir, Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}}
	var builds slot.Slot[int64, string] // generation -> directory

	// at boot, before any reader
	if err := modules.Reset(); err != nil {
		return err
	}

	// reconciler: one call at a time. IDs are immutable, so a generation
	// at or below the current one is never written again.
	reconcile := func(gen int64, files dirlife.Files) error {
		if cur, _, ok := builds.Get(); ok && gen <= cur {
			return errStale
		}
		dir, err := modules.Write(gen, files) // staged, atomic, durable
		if err != nil {
			return err
		}
		if !builds.SetIfNewer(gen, dir) {
			return errStale // and the next Prune removes dir
		}
		// keep the current generation and every leased one
		return modules.Prune(append(builds.Leased(), gen)...)
	}

	// reader
	read := func(render func(dir string) error) error {
		l, ok := builds.Lease()
		if !ok {
			return errNotReady
		}
		defer l.Release()
		return render(l.Value()) // l.Key()'s directory stays until Release
	}
	// readme:end
	out.reconcile, out.read = reconcile, read
	return nil
}
