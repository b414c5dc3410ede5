package platformmodule

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/mod/module"
	"leasekit.dev/dirlife"
	"leasekit.dev/platform/internal/rules"
)

// Files maps slash-separated relative paths to contents: the generated
// module, ready for [dirlife.Layout.Write].
type Files = dirlife.Files

// Input describes one platform.
type Input struct {
	// Name is the platform's name: a DNS label (lower-case letters,
	// digits and '-', at most 63 bytes, starting and ending with a letter
	// or digit) that a CUE module path can hold as an element, which
	// excludes the device names Windows reserves (con, prn, aux, nul,
	// com1 to com9, lpt1 to lpt9).
	Name string

	// Type is the platform's type, a DNS label; "" means "standard".
	Type string

	// Labels are added to every resource rendered against the platform.
	// Keys are Kubernetes label keys, values Kubernetes label values.
	Labels map[string]string

	// Catalogs are the component catalogs the platform carries; order does
	// not matter, paths must be unique.
	Catalogs []Catalog
}

// A Catalog is one component catalog a platform carries.
type Catalog struct {
	// Path is the catalog's CUE module path with its major version, such
	// as "example.com/catalogs/web@v1".
	Path string

	// Version is the catalog's semantic version, with the major version
	// of Path, written with or without a leading 'v' as Semantic
	// Versioning 2.0.0 allows: "1.4.2", "v1.4.2", "v0.3.0-rc.1",
	// "1.0.0+build.5". The module carries it as written; the kernel
	// compares versions as Semantic Versioning orders them, so "1.4.2"
	// equals "v1.4.2".
	Version string

	// Kinds are the component kinds the catalog provides, such as
	// "Deployment", each an upper-case-initial identifier. It is optional:
	// a catalog that lists no kinds provides any kind, and its module
	// carries no kinds field.
	Kinds []string

	// Disabled keeps the catalog in the platform but lets no instance use
	// it. The zero value enables it.
	Disabled bool
}

// An InputError reports an Input field that Generate refuses. Generate
// reports every field it refuses: one InputError, or one for each joined
// (find them with errors.As, or the Unwrap() []error of the join).
type InputError struct {
	Field string // such as "Catalogs[2].Version"
	Value string // the offending value, quoted as given
	Rule  string
}

// Error names the field, its value and the rule.
func (e *InputError) Error() string {
	return fmt.Sprintf("platformmodule: %s %q: %s", e.Field, e.Value, e.Rule)
}

const defaultType = "standard"

// check validates in and returns its catalogs sorted by path, or every
// field it refuses: one *InputError, or several joined, in the order of
// the fields.
func (in Input) check() ([]Catalog, error) {
	var errs []error
	fail := func(field, value, rule string) { errs = append(errs, &InputError{field, value, rule}) }
	if rule := rules.DNSLabel(in.Name); rule != "" {
		fail("Name", in.Name, rule)
	} else if err := module.CheckPath(ModulePrefix + in.Name + "@v0"); err != nil {
		// The name is an element of the module path: the loader refuses a
		// module whose path it cannot hold (a device name Windows reserves).
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		fail("Name", in.Name, fmt.Sprintf("must be an element of a CUE module path (%s%s@v0): %s", ModulePrefix, in.Name, msg))
	}
	if in.Type != "" {
		if rule := rules.DNSLabel(in.Type); rule != "" {
			fail("Type", in.Type, rule)
		}
	}
	keys := make([]string, 0, len(in.Labels))
	for k := range in.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if rule := rules.LabelKey(k); rule != "" {
			fail("Labels", k, rule)
		} else if v := in.Labels[k]; rules.LabelValue(v) != "" {
			fail(fmt.Sprintf("Labels[%q]", k), v, rules.LabelValue(v))
		}
	}
	seen := map[string]int{}
	for i, c := range in.Catalogs {
		if field, rule := rules.Catalog(c.Path, c.Version); rule != "" {
			if field == "path" {
				fail(fmt.Sprintf("Catalogs[%d].Path", i), c.Path, rule)
			} else {
				fail(fmt.Sprintf("Catalogs[%d].Version", i), c.Version, rule)
			}
		}
		if j, dup := seen[c.Path]; dup {
			fail(fmt.Sprintf("Catalogs[%d].Path", i), c.Path, fmt.Sprintf("duplicates Catalogs[%d].Path", j))
		} else {
			seen[c.Path] = i
		}
		kinds := map[string]bool{}
		for j, k := range c.Kinds {
			if rule := rules.Kind(k); rule != "" {
				fail(fmt.Sprintf("Catalogs[%d].Kinds[%d]", i, j), k, rule)
			} else if kinds[k] {
				fail(fmt.Sprintf("Catalogs[%d].Kinds[%d]", i, j), k, "is listed twice")
			}
			kinds[k] = true
		}
	}
	switch len(errs) {
	case 0:
	case 1:
		return nil, errs[0]
	default:
		return nil, errors.Join(errs...)
	}
	cats := slices.Clone(in.Catalogs)
	slices.SortFunc(cats, func(a, b Catalog) int { return strings.Compare(a.Path, b.Path) })
	for i := range cats {
		cats[i].Kinds = slices.Sorted(slices.Values(cats[i].Kinds))
	}
	return cats, nil
}
