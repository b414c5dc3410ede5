package readme

import (
	"context"
	"errors"
	"log/slog"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
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
	// stale generations are refused (publish.ErrStale), an identical
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

// Bundle stands for what a build step makes of a directory.
type Bundle struct{ Routes int }

func readmeGeneric(ctx context.Context, bundleDir string, logger *slog.Logger, loadBundle publish.BuildFunc[*Bundle], gen int64, files dirlife.Files, serve func(string, *Bundle)) error {
	errNotReady := errors.New("not ready")
	// readme:begin
	// one directory per content, built by a step of yours (parse, compile, validate)
	pub := publish.New(bundleDir, dirlife.IntCodec[int64]{Prefix: "gen-"}, loadBundle,
		publish.Options[int64, *Bundle, struct{}]{Logger: logger})
	if err := pub.Boot(); err != nil { // empties bundleDir before any reader
		return err
	}
	go pub.Run(ctx) // removes a replaced directory as soon as its last lease ends

	// reconciler: write, build, set, remove, in the only safe order
	rec, err := pub.Publish(ctx, gen, files, struct{}{})
	// a stale generation is refused (publish.ErrStale), the same files again
	// cost nothing, other files at the same generation get a directory of
	// their own (gen-<n>-<digest>), swapped in without refusing or waiting
	// for a reader; a failed build leaves the current record as it was

	// reader
	l, ok := pub.Slot().Lease()
	if !ok {
		return errNotReady
	}
	defer l.Release()
	serve(l.Value().Dir, l.Value().Artifact) // the directory stays, unchanged, until Release
	// readme:end
	_ = rec
	return err
}
