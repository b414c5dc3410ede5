package metrics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"leasekit.dev/examples/controller/internal/metrics"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// The metrics hook into a Publisher through its options and read its stats
// at each scrape.
func Example() {
	dir, err := os.MkdirTemp("", "platform-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	m := metrics.New()
	pub := platform.NewPublisher(filepath.Join(dir, "platform"), platform.PublisherOptions{
		OnPublish: m.ObservePublish,
		OnReclaim: m.ObserveReclaim,
	})
	reg := prometheus.NewRegistry()
	if err := m.Register(reg, pub.Stats); err != nil {
		panic(err)
	}
	if err := pub.Boot(); err != nil {
		panic(err)
	}
	files, err := platformmodule.Generate(platformmodule.Input{Name: "acme"})
	if err != nil {
		panic(err)
	}
	for range 2 { // the second publish is identical: unchanged
		if _, err := pub.Publish(context.Background(), 1, files, kernel.SkewWarn); err != nil {
			panic(err)
		}
	}

	fmt.Println("published:", testutil.ToFloat64(m.Publishes.WithLabelValues("published")))
	fmt.Println("unchanged:", testutil.ToFloat64(m.Publishes.WithLabelValues("unchanged")))
	n, err := testutil.GatherAndCount(reg, "leasekit_platform_generations_on_disk")
	if err != nil {
		panic(err)
	}
	fmt.Println("on-disk series:", n)
	// Output:
	// published: 1
	// unchanged: 1
	// on-disk series: 1
}
