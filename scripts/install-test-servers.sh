#!/usr/bin/env bash
# Installs the real object-store servers the objstore tests start on
# 127.0.0.1, at pinned versions. Each is built once per machine into a cache
# keyed by name and version (outside the checkout, so a fresh clone, as CI
# makes, reuses it) and linked into .tools/ under the repo (gitignored),
# where the tests look. Idempotent.
#   versitygw        S3 (posix backend, versioning)     .tools/bin/versitygw
#   fake-gcs-server  GCS                                .tools/bin/fake-gcs-server
#   azurite          Azure Blob                         .tools/azurite/node_modules/.bin/azurite
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

VERSITYGW_VERSION=v1.8.0
FAKEGCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0

CACHE=${PCHRONICLE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pchronicle/test-tools}
TOOLS="$PWD/.tools"
mkdir -p "$CACHE" "$TOOLS/bin"

# cached NAME VERSION FILE INSTALL... runs INSTALL DIR once into a
# temporary directory and renames it to $CACHE/NAME-VERSION once the install
# succeeded and left FILE (relative to DIR), so a failed or interrupted
# install never looks complete. It runs inside $(...), where set -e does
# not reach: every failure is checked.
cached() {
  local name=$1 version=$2 file=$3 dir="$CACHE/$1-$2"
  shift 3
  if [ ! -e "$dir/$file" ]; then
    echo "install-test-servers: $name $version" >&2
    local tmp
    tmp=$(mktemp -d "$CACHE/.tmp-$name-XXXXXX") || return 1
    if ! "$@" "$tmp" >&2 || [ ! -e "$tmp/$file" ]; then
      rm -rf "$tmp"
      echo "install-test-servers: installing $name $version failed" >&2
      return 1
    fi
    rm -rf "$dir" && mv -T "$tmp" "$dir" || return 1
  fi
  echo "$dir"
}

go_install() { GOBIN="$2" CGO_ENABLED=0 go install "$1"; }
npm_install() { npm install --prefix "$2" --no-audit --no-fund --loglevel=error "$1"; }

dir=$(cached versitygw "$VERSITYGW_VERSION" versitygw go_install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION")
ln -sfn "$dir/versitygw" "$TOOLS/bin/versitygw"
dir=$(cached fake-gcs-server "$FAKEGCS_VERSION" fake-gcs-server go_install "github.com/fsouza/fake-gcs-server@$FAKEGCS_VERSION")
ln -sfn "$dir/fake-gcs-server" "$TOOLS/bin/fake-gcs-server"

command -v npm >/dev/null 2>&1 || { echo "install-test-servers: npm is required for Azurite" >&2; exit 1; }
dir=$(cached azurite "$AZURITE_VERSION" node_modules/.bin/azurite-blob npm_install "azurite@$AZURITE_VERSION")
# (.tools/azurite was a directory of its own before the cache)
[ -L "$TOOLS/azurite" ] || rm -rf "$TOOLS/azurite"
ln -sfn "$dir" "$TOOLS/azurite.tmp"
mv -T "$TOOLS/azurite.tmp" "$TOOLS/azurite"
