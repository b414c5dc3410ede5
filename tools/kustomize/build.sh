#!/usr/bin/env bash
# Builds kustomize, which the controller's deploy test runs on
# examples/controller/config/default, from the Go module proxy at a pinned
# version into a per-user cache directory keyed by that version, and prints
# the binary's path, for
#
#	LEASEKIT_KUSTOMIZE=$(tools/kustomize/build.sh) go test ./examples/controller/...
#
# The module proxy (or a module cache) is all this needs. A binary already
# built and reporting the pinned version is kept; anything else is rebuilt.
# Only the path goes to stdout; progress goes to stderr.
#
# kustomize v5.8.2 is the newest release that builds with this repository's
# Go; later ones need a newer Go.
#
# Environment:
#	LEASEKIT_KUSTOMIZE_DIR  the directory to build into (default: the cache
#	                        directory below)
#	XDG_CACHE_HOME          the cache root, when an absolute path (default:
#	                        $HOME/.cache)
set -euo pipefail

KUSTOMIZE_VERSION=v5.8.2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf 'kustomize: %s\n' "$*" >&2; }

# The cache root: XDG_CACHE_HOME when it is an absolute path (the XDG rule:
# a relative one is ignored), else $HOME/.cache.
cache="${XDG_CACHE_HOME:-}"
if [[ "$cache" != /* ]]; then
	if [ -z "${HOME:-}" ]; then
		if [ -z "${LEASEKIT_KUSTOMIZE_DIR:-}" ]; then
			log "neither XDG_CACHE_HOME (absolute) nor HOME is set: set one, or LEASEKIT_KUSTOMIZE_DIR"
			exit 1
		fi
	else
		cache="$HOME/.cache"
	fi
fi
dir="${LEASEKIT_KUSTOMIZE_DIR:-$cache/leasekit/kustomize/$KUSTOMIZE_VERSION}"

# A build's temporary output, removed if the script stops before renaming it
# (a failed build, an interrupt): a killed build leaves no partial binary and
# no temporary file behind.
tmp=""
cleanup() { if [ -n "$tmp" ]; then rm -f "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The module must require the version this script names, so the two cannot
# drift.
if ! grep -Eq "^[[:space:]]*(require[[:space:]]+)?sigs\.k8s\.io/kustomize/kustomize/v5[[:space:]]+$KUSTOMIZE_VERSION([[:space:]]|$)" "$here/go.mod"; then
	log "tools/kustomize/go.mod does not require sigs.k8s.io/kustomize/kustomize/v5 $KUSTOMIZE_VERSION; update the module and this script together"
	exit 1
fi

# reports BINARY: true when BINARY exists and 'BINARY version' prints the
# pinned version as a whole word.
reports() {
	[ -x "$1" ] || return 1
	local out
	out="$("$1" version 2>&1)" || return 1
	grep -Eq "(^|[^0-9.])${KUSTOMIZE_VERSION//./\\.}([^0-9.]|$)" <<<"$out"
}

mkdir -p "$dir"
out="$dir/kustomize"
if reports "$out"; then
	log "$KUSTOMIZE_VERSION: present in $dir"
else
	log "$KUSTOMIZE_VERSION: building"
	start=$SECONDS
	tmp="$(mktemp "$dir/.kustomize.XXXXXX")"
	# The module stands outside the workspace: GOWORK=off. The binary goes
	# to a temporary name first, so an interrupted build never leaves a
	# half-written binary under the final name. 'kustomize version' reads
	# its version from the build information of the module required.
	if ! (cd "$here" && GOWORK=off CGO_ENABLED=0 \
		go build -trimpath -ldflags "-s -w" -o "$tmp" sigs.k8s.io/kustomize/kustomize/v5); then
		log "build failed"
		exit 1
	fi
	mv -f "$tmp" "$out"
	tmp=""
	if ! reports "$out"; then
		log "built, but '$out version' does not report $KUSTOMIZE_VERSION:"
		"$out" version >&2 || true
		exit 1
	fi
	log "$KUSTOMIZE_VERSION: built in $((SECONDS - start))s"
fi

printf '%s\n' "$out"
