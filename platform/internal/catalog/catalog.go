// Package catalog holds the rules for catalog paths and versions that the
// generator and the kernel share.
package catalog

import (
	"fmt"
	"strings"

	"cuelang.org/go/mod/module"
	"golang.org/x/mod/semver"
)

// Check validates a catalog's module path and version. It returns the
// field ("path" or "version") and the rule of the first problem, or "", ""
// when both are valid: the path is a CUE module path with a major version,
// the version a canonical semantic version of that major version.
func Check(path, version string) (field, rule string) {
	if _, major, ok := module.SplitPathVersion(path); !ok || major == "" {
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
	if _, major, _ := module.SplitPathVersion(path); semver.Major(version) != major {
		return "version", fmt.Sprintf("must have the major version of the path, %s", major)
	}
	return "", ""
}

// Newer reports whether version a is newer than version b. Both must be
// valid semantic versions.
func Newer(a, b string) bool { return semver.Compare(a, b) > 0 }
