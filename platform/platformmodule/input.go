package platformmodule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/internal/catalog"
)

// Files maps slash-separated relative paths to contents: the generated
// module, ready for [dirlife.Layout.Write].
type Files = dirlife.Files

// Input describes one platform.
type Input struct {
	// Name is the platform's name: a DNS label (lower-case letters,
	// digits and '-', at most 63 bytes, starting and ending with a letter
	// or digit).
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

	// Version is the catalog's canonical semantic version, with the major
	// version of Path: "v1.4.2".
	Version string

	// Kinds are the component kinds the catalog provides, such as
	// "Deployment": at least one, each an upper-case-initial identifier.
	Kinds []string

	// Disabled keeps the catalog in the platform but lets no instance use
	// it. The zero value enables it.
	Disabled bool
}

// An InputError reports an Input field that Generate refuses.
type InputError struct {
	Field string // such as "Catalogs[2].Version"
	Value string // the offending value, quoted as given
	Rule  string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("platformmodule: %s %q: %s", e.Field, e.Value, e.Rule)
}

const defaultType = "standard"

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	kindName   = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	labelName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// CheckDNSLabel returns a rule description if s is not a DNS label, else "".
func checkDNSLabel(s string) string {
	if len(s) > 63 {
		return "must be at most 63 bytes"
	}
	if !dnsLabel.MatchString(s) {
		return "must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	}
	return ""
}

// checkLabelKey returns a rule description if k is not a Kubernetes label
// key ([prefix/]name), else "".
func checkLabelKey(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix {
		if prefix == "" || len(prefix) > 253 || strings.Contains(name, "/") {
			return "must be a label key: an optional DNS subdomain prefix and '/', then a name"
		}
		for _, part := range strings.Split(prefix, ".") {
			if checkDNSLabel(part) != "" {
				return "must be a label key: its prefix must be a DNS subdomain"
			}
		}
	}
	if name == "" || len(name) > 63 || !labelName.MatchString(name) {
		return "must be a label key: the name is 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

// check validates in and returns its catalogs sorted by path.
func (in Input) check() ([]Catalog, error) {
	if rule := checkDNSLabel(in.Name); rule != "" {
		return nil, &InputError{"Name", in.Name, rule}
	}
	if in.Type != "" {
		if rule := checkDNSLabel(in.Type); rule != "" {
			return nil, &InputError{"Type", in.Type, rule}
		}
	}
	keys := make([]string, 0, len(in.Labels))
	for k := range in.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if rule := checkLabelKey(k); rule != "" {
			return nil, &InputError{"Labels", k, rule}
		}
		if v := in.Labels[k]; len(v) > 63 || !labelValue.MatchString(v) {
			return nil, &InputError{fmt.Sprintf("Labels[%q]", k), v, "must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"}
		}
	}
	seen := map[string]int{}
	for i, c := range in.Catalogs {
		if field, rule := catalog.Check(c.Path, c.Version); rule != "" {
			if field == "path" {
				return nil, &InputError{fmt.Sprintf("Catalogs[%d].Path", i), c.Path, rule}
			}
			return nil, &InputError{fmt.Sprintf("Catalogs[%d].Version", i), c.Version, rule}
		}
		if j, dup := seen[c.Path]; dup {
			return nil, &InputError{fmt.Sprintf("Catalogs[%d].Path", i), c.Path, fmt.Sprintf("duplicates Catalogs[%d].Path", j)}
		}
		seen[c.Path] = i
		if len(c.Kinds) == 0 {
			return nil, &InputError{fmt.Sprintf("Catalogs[%d].Kinds", i), "", "must list at least one kind"}
		}
		kinds := map[string]bool{}
		for j, k := range c.Kinds {
			if !kindName.MatchString(k) {
				return nil, &InputError{fmt.Sprintf("Catalogs[%d].Kinds[%d]", i, j), k, "must be an identifier starting with an upper-case letter"}
			}
			if kinds[k] {
				return nil, &InputError{fmt.Sprintf("Catalogs[%d].Kinds[%d]", i, j), k, "is listed twice"}
			}
			kinds[k] = true
		}
	}
	cats := slices.Clone(in.Catalogs)
	slices.SortFunc(cats, func(a, b Catalog) int { return strings.Compare(a.Path, b.Path) })
	for i := range cats {
		cats[i].Kinds = slices.Sorted(slices.Values(cats[i].Kinds))
	}
	return cats, nil
}
