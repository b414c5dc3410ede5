package kernel_test

import (
	"context"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// TestValuesCheckedAsCUEEvaluatesThem: a value the instance or platform
// holds as no concrete string (a default, or a disjunction the schema
// narrows to a string) is checked as CUE evaluates it: a kind its catalog
// does not provide, a catalog not required and a name past the rules are
// refused, and a catalog required through a default is required.
func TestValuesCheckedAsCUEEvaluatesThem(t *testing.T) {
	ctx := context.Background()
	k := kernel.New()
	p, err := k.BuildPlatform(ctx, generated(t, platformmodule.Input{Name: "acme", Catalogs: []platformmodule.Catalog{
		{Path: webPath, Version: "v1.4.0", Kinds: []string{"Service"}},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	const requires = `requires: "` + webPath + `": "v1.0.0"` + "\n"
	// A problem the case's error must not tell: one said by another rule,
	// or untrue.
	not := map[string]string{
		"kind past its rule by default, refused elsewhere": "does not provide kind",
		"requires by default, refused elsewhere":           "is not in the instance's requires",
	}
	for _, tc := range []struct {
		name, body, want string // want "": renders
	}{
		{"kind by default", `name: "shop"
` + requires + `components: a: {kind: *1 | "CronJob", catalog: "` + webPath + `"}`, "does not provide kind CronJob"},
		{"kind narrowed", `name: "shop"
` + requires + `components: a: {kind: int | "CronJob", catalog: "` + webPath + `"}`, "does not provide kind CronJob"},
		{"catalog by default", `name: "shop"
` + requires + `components: a: {kind: "Service", catalog: *1 | "example.com/catalogs/other@v1"}`, "is not in the instance's requires"},
		{"name by default", `name: *1 | "Shop_1"
` + requires, `"Shop_1"`},
		{"label value by default", `name: "shop"
labels: tier: *1 | "no spaces allowed"
` + requires, `"no spaces allowed"`},
		{"version by default", `name: "shop"
requires: "` + webPath + `": *1 | "v1.x"`, `"v1.x"`},
		{"components by default", `name: "shop"
` + requires + `components: *{a: {kind: "CronJob", catalog: "` + webPath + `"}} | {}`, "does not provide kind CronJob"},
		{"component by default", `name: "shop"
` + requires + `components: a: *{kind: "CronJob", catalog: "` + webPath + `"} | {kind: "Service", catalog: "` + webPath + `", x: 1}`, "does not provide kind CronJob"},
		{"kind from a pattern", `name: "shop"
` + requires + `components: [string]: {kind: *"CronJob" | string, catalog: "` + webPath + `"}
components: a: {}`, "does not provide kind CronJob"},
		{"requires by default", `name: "shop"
requires: *{"` + webPath + `": "v1.0.0"} | {}
components: a: {kind: "Service", catalog: "` + webPath + `"}`, ""},
		{"label key by default", `name: "shop"
` + requires + `components: a: {kind: "Service", catalog: "` + webPath + `", labels: *{"Bad Key": "x"} | {}}`, `"Bad Key"`},
		// The schema refusing the instance elsewhere, each value is checked
		// as written, narrowed to a string as the schema narrows it.
		{"label value by default, refused elsewhere", `name: "shop"
` + requires + `components: *{a: {kind: "Service", catalog: "` + webPath + `"}} | {}
for n in ["b"] {
	components: (n): {kind: "Service", catalog: "` + webPath + `", replicas: -1, labels: role: *1 | "no spaces allowed"}
}`, `"no spaces allowed"`},
		{"label value by default, beside a kind not provided", `name: "shop"
` + requires + `components: *{a: {kind: "Service", catalog: "` + webPath + `"}} | {}
for n in ["b"] {
	components: (n): {kind: "CronJob", catalog: "` + webPath + `", replicas: -1, labels: role: *1 | "no spaces allowed"}
}`, `"no spaces allowed"`},
		{"kind by default, refused elsewhere", `name: "shop"
` + requires + `components: *{a: {kind: *1 | "CronJob", catalog: "` + webPath + `"}} | {}
for n in ["b"] {
	components: (n): {kind: "Service", catalog: "` + webPath + `", replicas: -1}
}`, "does not provide kind CronJob"},
		{"kind past its rule by default, refused elsewhere", `name: "shop"
` + requires + `components: *{a: {kind: *1 | "lower case", catalog: "` + webPath + `"}} | {}
for n in ["b"] {
	components: (n): {kind: "Service", catalog: "` + webPath + `", replicas: -1}
}`, `"lower case"`},
		{"requires by default, refused elsewhere", `name: "shop"
requires: *{"` + webPath + `": "v1.0.0", z: 1} | {"` + webPath + `": "v1.0.0", y: 2}
components: a: {kind: "Service", catalog: "` + webPath + `"}`, "requires"},
		{"name by default, refused elsewhere", `name: *1 | "Shop_1"
` + requires + `components: a: {kind: "Service", catalog: "` + webPath + `", replicas: 1.5}`, `"Shop_1"`},
		{"required by default", `name: "shop"
requires: "` + webPath + `": *1 | "v1.0.0"
components: a: {kind: *1 | "Service", catalog: *1 | "` + webPath + `"}`, ""},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			out, err := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(tc.body)}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && (len(out.Resources) != 1 || out.Resources[0].Kind != "Service"):
				t.Fatalf("rendered %+v", out.Resources)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Render: %v, want an error naming %s", err, tc.want)
			case tc.want != "" && not[tc.name] != "" && strings.Contains(err.Error(), not[tc.name]):
				t.Fatalf("Render: %v, which tells %q", err, not[tc.name])
			}
		})
	}

	// A platform's values likewise.
	dir := writeModule(t, platformModule(`name: *1 | "Acme_Platform"
catalogs: "`+webPath+`": {version: *1 | "v1.4.0", kinds: *[1] | ["lower"]}
`))
	_, err = k.BuildPlatform(ctx, dir)
	for _, want := range []string{`"Acme_Platform"`, `kind "lower"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("BuildPlatform: %v, want an error naming %s", err, want)
		}
	}
	// And refused elsewhere: its values as written, narrowed as the schema
	// narrows them.
	dir = writeModule(t, platformModule(`name: "acme"
catalogs: *{"`+webPath+`": {version: "v1.4.0"}} | {}
for n in ["example.com/x@v1"] {
	catalogs: (n): {version: *1 | "v1.x", enabled: "no", kinds: *[1] | ["lower"]}
}
`))
	_, err = k.BuildPlatform(ctx, dir)
	for _, want := range []string{`"v1.x"`, `kind "lower"`, "enabled"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("BuildPlatform, refused elsewhere: %v, want an error naming %s", err, want)
		}
	}
}
