#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need
# (by this project's scripts), vets, and runs every test once, including the
# end-to-end tests that run the real binary. The packages whose code runs
# concurrently run under the race detector instead of plainly (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
start=$SECONDS

# Debian's Chromium for the Web Explorer's browser tests: mostly download
# and unpacking, so it runs beside the CPU-bound installs below.
chromium_log=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$bin" "$chromium_log"' EXIT
bash scripts/install-chromium.sh >"$chromium_log" 2>&1 &
chromium=$!
# Real S3 (versitygw), Azure (Azurite) and GCS (fake-gcs-server) servers for
# the object-store conformance suite, pinned, cached per machine.
bash scripts/install-test-servers.sh
if ! wait "$chromium"; then
  cat "$chromium_log" >&2
  exit 1
fi
cat "$chromium_log" >&2

# One binary for every package's end-to-end tests (testutil.Binary), with
# the Iceberg helper that `import --to iceberg:` starts beside it.
go build -o "$bin/" ./cmd/pchronicle ./cmd/pchronicle-iceberg
export PCHRONICLE_TEST_BINARY="$bin/pchronicle"

go vet ./...
# Packages under internal/ that run under -race: add a package by its
# directory name (with its subpackages).
race_packages="engine catalog store server generation route gcfloor"
race_pattern="^github.com/pchronicle/pchronicle/internal/($(echo $race_packages | tr ' ' '|'))(/|$)"
plain=$(go list ./... | grep -Ev "$race_pattern")
raced=$(go list ./... | grep -E "$race_pattern")
go test -count=1 -timeout 45m "$@" $plain
# The one test that bounds peak RSS, which the race detector multiplies.
go test -count=1 -timeout 45m -run '^TestDocumentsStayWithinTheirBudget$' "$@" ./internal/engine
go test -race -count=1 -timeout 45m "$@" $raced
echo "test.sh: whole suite in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s" >&2
