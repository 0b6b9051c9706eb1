#!/usr/bin/env bash
# Builds a release binary of pchronicle: reproducible paths (-trimpath),
# stripped of symbols and DWARF (-s -w), its version and commit stamped.
# Usage: [VERSION=v1.2.3] scripts/release.sh [OUTPUT]   (default bin/pchronicle)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out=${1:-bin/pchronicle}
go build -trimpath -ldflags "-s -w $(version_ldflags)" -o "$out" ./cmd/pchronicle
echo "release: $out, $(du -h "$out" | cut -f1) ($(stat -c %s "$out") bytes)" >&2
# The Iceberg helper that `import --to iceberg:` starts, found beside it.
helper="$(dirname "$out")/pchronicle-iceberg"
go build -trimpath -ldflags "-s -w" -o "$helper" ./cmd/pchronicle-iceberg
echo "release: $helper, $(du -h "$helper" | cut -f1)" >&2
"$out" --version >&2
