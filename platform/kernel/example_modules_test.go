package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"leasekit.dev/platform/kernel"
)

// The two modules a user writes, by hand: a platform module, which
// BuildPlatform builds (package platformmodule describes its fields), and
// an instance module, which Render renders against it. Names are DNS
// labels (lower-case letters, digits and '-', at most 63 bytes), kinds
// upper-case-initial identifiers, labels Kubernetes label keys and values.
// An instance module's package holds:
//
//	name:      "shop"               // required, a name
//	namespace: "prod"               // optional; set on every resource when present
//	requires: "example.com/catalogs/web@v1": "v1.2.0" // the catalog versions it was written against
//	labels: tier: "frontend"        // optional; added to every resource
//	components: web: {              // named by a name; each renders one resource
//		kind:     "Deployment"      // required, a kind its catalog provides
//		catalog:  "example.com/catalogs/web@v1" // required; must be in requires
//		replicas: 2                 // optional, an int >= 0; 1 when absent
//		labels: role: "frontend"    // optional
//		spec: image: "shop:1"       // optional, concrete; a replicas here must equal the one rendered
//	}
//
// Every catalog a component uses must be in the instance's requires, and
// every catalog it requires must be one the platform carries, enabled. A
// component renders as one resource: apiVersion "leasekit.dev/v1alpha1",
// its kind, metadata.name "<name>-<component>", the namespace, the labels
// of the platform, the instance and the component together with
// app.kubernetes.io/instance (the name), app.kubernetes.io/managed-by
// ("leasekit"), app.kubernetes.io/name (the component),
// platform.leasekit.dev/name and platform.leasekit.dev/type (a key set
// twice must agree), annotations naming the catalog and the version the
// platform carries, and the spec with replicas.
func Example_modules() {
	platformDir := writeTemp(map[string][]byte{
		"cue.mod/module.cue": []byte(`module: "platform.example.com/acme@v0"
language: version: "v0.14.0"
`),
		"platform.cue": []byte(`package platform

name: "acme"
type: "edge"
labels: team: "platform"
catalogs: "example.com/catalogs/web@v1": {
	version: "v1.4.0"
	kinds: ["Deployment", "Service"]
}
catalogs: "example.com/catalogs/db@v0": {
	version: "0.3.0"
	enabled: false
}
`),
	})
	defer os.RemoveAll(platformDir)
	instanceDir := writeTemp(map[string][]byte{
		"cue.mod/module.cue": []byte(`module: "example.com/shop@v0"
language: version: "v0.14.0"
`),
		"shop.cue": []byte(`package shop

name:      "shop"
namespace: "prod"
requires: "example.com/catalogs/web@v1": "v1.2.0"
labels: tier: "frontend"
components: web: {
	kind:     "Deployment"
	catalog:  "example.com/catalogs/web@v1"
	replicas: *2 | int
	spec: image: "shop:1"
}
components: api: {
	kind:    "Service"
	catalog: "example.com/catalogs/web@v1"
	labels: "app.kubernetes.io/version": "1.0"
	spec: port: 8080
}
`),
	})
	defer os.RemoveAll(instanceDir)

	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), platformDir)
	if err != nil {
		log.Fatal(err)
	}
	out, err := k.Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: instanceDir}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range out.Resources {
		data, _ := json.MarshalIndent(r.Object, "", "  ")
		fmt.Println(string(data))
	}
	// Output:
	// {
	//   "apiVersion": "leasekit.dev/v1alpha1",
	//   "kind": "Service",
	//   "metadata": {
	//     "annotations": {
	//       "platform.leasekit.dev/catalog": "example.com/catalogs/web@v1",
	//       "platform.leasekit.dev/catalog-version": "v1.4.0"
	//     },
	//     "labels": {
	//       "app.kubernetes.io/instance": "shop",
	//       "app.kubernetes.io/managed-by": "leasekit",
	//       "app.kubernetes.io/name": "api",
	//       "app.kubernetes.io/version": "1.0",
	//       "platform.leasekit.dev/name": "acme",
	//       "platform.leasekit.dev/type": "edge",
	//       "team": "platform",
	//       "tier": "frontend"
	//     },
	//     "name": "shop-api",
	//     "namespace": "prod"
	//   },
	//   "spec": {
	//     "port": 8080,
	//     "replicas": 1
	//   }
	// }
	// {
	//   "apiVersion": "leasekit.dev/v1alpha1",
	//   "kind": "Deployment",
	//   "metadata": {
	//     "annotations": {
	//       "platform.leasekit.dev/catalog": "example.com/catalogs/web@v1",
	//       "platform.leasekit.dev/catalog-version": "v1.4.0"
	//     },
	//     "labels": {
	//       "app.kubernetes.io/instance": "shop",
	//       "app.kubernetes.io/managed-by": "leasekit",
	//       "app.kubernetes.io/name": "web",
	//       "platform.leasekit.dev/name": "acme",
	//       "platform.leasekit.dev/type": "edge",
	//       "team": "platform",
	//       "tier": "frontend"
	//     },
	//     "name": "shop-web",
	//     "namespace": "prod"
	//   },
	//   "spec": {
	//     "image": "shop:1",
	//     "replicas": 2
	//   }
	// }
}
