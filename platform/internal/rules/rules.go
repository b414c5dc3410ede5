package rules

import (
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/mod/module"
	"golang.org/x/mod/semver"
)

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	kindName   = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	labelName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)

	// semVer is Semantic Versioning 2.0.0's own grammar, with an optional
	// leading 'v': no leading zeros in a numeric identifier, dot-separated
	// prerelease and build identifiers.
	semVer = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
		`(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$`)
)

// DNSLabel checks a name: lower-case letters, digits and '-', starting and
// ending with a letter or digit, at most 63 bytes.
func DNSLabel(s string) string {
	if len(s) > 63 {
		return "must be at most 63 bytes"
	}
	if !dnsLabel.MatchString(s) {
		return "must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	}
	return ""
}

// Kind checks a component kind: an identifier starting with an upper-case
// letter.
func Kind(s string) string {
	if !kindName.MatchString(s) {
		return "must be an identifier starting with an upper-case letter"
	}
	return ""
}

// LabelKey checks a Kubernetes label key: an optional DNS subdomain prefix
// and '/', then a name of 1 to 63 letters, digits, '-', '_' or '.'.
func LabelKey(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix {
		if prefix == "" || len(prefix) > 253 || strings.Contains(name, "/") {
			return "must be a label key: an optional DNS subdomain prefix and '/', then a name"
		}
		for _, part := range strings.Split(prefix, ".") {
			if DNSLabel(part) != "" {
				return "must be a label key: its prefix must be a DNS subdomain"
			}
		}
	}
	if name == "" || len(name) > 63 || !labelName.MatchString(name) {
		return "must be a label key: the name is 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

// LabelValue checks a Kubernetes label value: empty, or at most 63
// letters, digits, '-', '_' or '.', starting and ending with a letter or
// digit.
func LabelValue(v string) string {
	if len(v) > 63 || !labelValue.MatchString(v) {
		return "must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

// Catalog checks a catalog's module path and version. It returns the field
// ("path" or "version") and the rule of the first problem, or "", "": the
// path is a CUE module path with a major version, the version a semantic
// version (see [Version]) of that major version.
func Catalog(path, version string) (field, rule string) {
	if rule := CatalogPath(path); rule != "" {
		return "path", rule
	}
	if rule := Version(version); rule != "" {
		return "version", rule
	}
	if _, major, _ := ast.SplitPackageVersion(path); semver.Major(goVersion(version)) != major {
		return "version", fmt.Sprintf("must have the major version of the path, %s", major)
	}
	return "", ""
}

// CatalogPath checks a catalog's module path: a CUE module path with a
// major version.
func CatalogPath(path string) string {
	if _, major, ok := ast.SplitPackageVersion(path); !ok || major == "" {
		return "must be a CUE module path with a major version, such as example.com/catalogs/web@v1"
	}
	if err := module.CheckPath(path); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "must be a valid CUE module path: " + msg
	}
	return ""
}

// Version checks a catalog version: a semantic version as Semantic
// Versioning 2.0.0 writes it, MAJOR.MINOR.PATCH with optional prerelease
// and build metadata, with or without a leading 'v': "1.4.2", "v1.4.2",
// "v0.3.0-rc.1", "1.0.0+build.5". Nothing else is accepted: no shorthand
// ("v1.2"), no leading zeros ("01.2.3"), no upper-case 'V', no spaces.
func Version(s string) string {
	if !semVer.MatchString(s) {
		return "must be a semantic version such as 1.2.3 or v1.2.3"
	}
	return ""
}

// Compare compares two valid versions (see [Version]) as Semantic
// Versioning orders them: the leading 'v' and build metadata are ignored,
// a prerelease is older than its release. It returns -1, 0 or +1.
func Compare(a, b string) int { return semver.Compare(goVersion(a), goVersion(b)) }

// Newer reports whether version a is newer than version b. Both must be
// valid versions (see [Version]).
func Newer(a, b string) bool { return Compare(a, b) > 0 }

// goVersion spells a valid version with its leading 'v', as
// golang.org/x/mod/semver wants it.
func goVersion(s string) string {
	if strings.HasPrefix(s, "v") {
		return s
	}
	return "v" + s
}
