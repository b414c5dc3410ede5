#!/usr/bin/env bash
# Builds the two binaries controller-runtime's envtest starts, kube-apiserver
# and etcd, from the Go module proxy at pinned versions, into a per-user cache
# directory keyed by those versions, and prints that directory, for
#
#	KUBEBUILDER_ASSETS=$(tools/envtest/assets.sh) go test ./examples/controller/...
#
# Machines without internet access cannot run setup-envtest's download; the
# module proxy (or a module cache) is all this needs. A binary already built
# and reporting the pinned version is kept; anything else is rebuilt. Only the
# directory goes to stdout; progress goes to stderr.
#
# The first build is slow (kube-apiserver: minutes and about 2.5 GB of memory
# on two cores); later runs relink from the Go build cache in seconds, or skip
# the build entirely.
#
# Environment:
#	LEASEKIT_ENVTEST_DIR  the directory to build into (default: the cache
#	                      directory below)
#	XDG_CACHE_HOME        the cache root, when an absolute path (default:
#	                      $HOME/.cache)
set -euo pipefail

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf 'envtest assets: %s\n' "$*" >&2; }

# The cache root: XDG_CACHE_HOME when it is an absolute path (the XDG rule:
# a relative one is ignored), else $HOME/.cache.
cache="${XDG_CACHE_HOME:-}"
if [[ "$cache" != /* ]]; then
	if [ -z "${HOME:-}" ]; then
		if [ -z "${LEASEKIT_ENVTEST_DIR:-}" ]; then
			log "neither XDG_CACHE_HOME (absolute) nor HOME is set: set one, or LEASEKIT_ENVTEST_DIR"
			exit 1
		fi
	else
		cache="$HOME/.cache"
	fi
fi
dir="${LEASEKIT_ENVTEST_DIR:-$cache/leasekit/envtest/k8s-$K8S_VERSION-etcd-$ETCD_VERSION}"

# A build's temporary output, removed if the script stops before renaming it
# (a failed build, an interrupt): a killed build leaves no partial binary and
# no temporary file behind.
tmp=""
cleanup() { if [ -n "$tmp" ]; then rm -f "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# pinned MODULE_DIR PACKAGE VERSION: fails unless the module's go.mod requires
# PACKAGE's module at VERSION, so the script and the modules cannot drift.
pinned() {
	if ! grep -Eq "^[[:space:]]*(require[[:space:]]+)?$2[[:space:]]+$3([[:space:]]|$)" "$here/$1/go.mod"; then
		log "$1/go.mod does not require $2 $3; update the module and this script together"
		exit 1
	fi
}
pinned kube-apiserver k8s.io/kubernetes "$K8S_VERSION"
pinned etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"

# reports BINARY WANT: true when BINARY exists and its --version output
# names WANT as a whole word.
reports() {
	[ -x "$1" ] || return 1
	local out
	out="$("$1" --version 2>&1)" || return 1
	grep -Eq "(^|[^0-9.])${2//./\\.}([^0-9.]|$)" <<<"$out"
}

# build NAME MODULE_DIR PACKAGE LDFLAGS WANT: builds PACKAGE from the module in
# MODULE_DIR into $dir/NAME unless it is there already and reports WANT.
build() {
	local name=$1 module=$2 pkg=$3 ldflags=$4 want=$5
	local out="$dir/$name"
	if reports "$out" "$want"; then
		log "$name $want: present in $dir"
		return
	fi
	log "$name $want: building (the first build takes minutes)"
	local start=$SECONDS
	tmp="$(mktemp "$dir/.$name.XXXXXX")"
	# The module stands outside the workspace: GOWORK=off. The binary goes to a
	# temporary name first, so an interrupted build never leaves a half-written
	# binary under the final name.
	if ! (cd "$here/$module" && GOWORK=off CGO_ENABLED=0 \
		go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"); then
		log "$name: build failed"
		exit 1
	fi
	mv -f "$tmp" "$out"
	tmp=""
	if ! reports "$out" "$want"; then
		log "$name: built, but '$out --version' does not report $want:"
		"$out" --version >&2 || true
		exit 1
	fi
	log "$name $want: built in $((SECONDS - start))s"
}

mkdir -p "$dir"

minor="${K8S_VERSION#v1.}"
minor="${minor%%.*}"
kver=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kver+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
	kver+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

build etcd etcd go.etcd.io/etcd/server/v3 "-s -w" "${ETCD_VERSION#v}"
build kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "-s -w$kver" "$K8S_VERSION"

printf '%s\n' "$dir"
