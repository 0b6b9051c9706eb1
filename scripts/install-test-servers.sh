#!/usr/bin/env bash
# Installs the real object-store servers the objstore tests start on
# 127.0.0.1, at pinned versions, into .tools/ under the repo (gitignored).
# Idempotent: a tool already installed at its pinned version is skipped.
#   versitygw        S3 (posix backend, versioning)     .tools/bin/versitygw
#   fake-gcs-server  GCS                                .tools/bin/fake-gcs-server
#   azurite          Azure Blob                         .tools/azurite/node_modules/.bin/azurite
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

VERSITYGW_VERSION=v1.8.0
FAKEGCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0

TOOLS="$PWD/.tools"
mkdir -p "$TOOLS/bin"

# go_tool installs a Go command once per version; the stamp file records
# which version the binary in .tools/bin is.
go_tool() {
  local name=$1 pkg=$2 version=$3
  local stamp="$TOOLS/bin/.$name.version"
  if [ -x "$TOOLS/bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    return
  fi
  echo "install-test-servers: $name $version" >&2
  GOBIN="$TOOLS/bin" CGO_ENABLED=0 go install "$pkg@$version"
  echo "$version" >"$stamp"
}

go_tool versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION"
go_tool fake-gcs-server github.com/fsouza/fake-gcs-server "$FAKEGCS_VERSION"

azurite_installed() {
  [ -x "$TOOLS/azurite/node_modules/.bin/azurite" ] &&
    grep -q "\"version\": \"$AZURITE_VERSION\"" "$TOOLS/azurite/node_modules/azurite/package.json" 2>/dev/null
}
if ! azurite_installed; then
  command -v npm >/dev/null 2>&1 || { echo "install-test-servers: npm is required for Azurite" >&2; exit 1; }
  echo "install-test-servers: azurite $AZURITE_VERSION" >&2
  mkdir -p "$TOOLS/azurite"
  npm install --prefix "$TOOLS/azurite" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION"
fi
