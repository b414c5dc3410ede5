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
// path is a CUE module path with a major version, the version a canonical
// semantic version of that major version.
func Catalog(path, version string) (field, rule string) {
	if _, major, ok := ast.SplitPackageVersion(path); !ok || major == "" {
		return "path", "must be a CUE module path with a major version, such as example.com/catalogs/web@v1"
	}
	if err := module.CheckPath(path); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "path", "must be a valid CUE module path: " + msg
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return "version", "must be a canonical semantic version such as v1.2.3"
	}
	if _, major, _ := ast.SplitPackageVersion(path); semver.Major(version) != major {
		return "version", fmt.Sprintf("must have the major version of the path, %s", major)
	}
	return "", ""
}

// Newer reports whether version a is newer than version b. Both must be
// valid semantic versions.
func Newer(a, b string) bool { return semver.Compare(a, b) > 0 }
