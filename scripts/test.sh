#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need
# (pinned, by this script), vets, and runs every test, including the
# end-to-end tests that build and run the real binary, then the race
# detector over the packages whose code runs concurrently.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# Real S3 (versitygw), Azure (Azurite) and GCS (fake-gcs-server) servers for
# the object-store conformance suite, pinned, under .tools/.
bash scripts/install-test-servers.sh
# Debian's Chromium, pinned, for the Web Explorer's browser tests.
bash scripts/install-chromium.sh
go vet ./...
go test -count=1 -timeout 45m "$@" ./...
# Packages under internal/ whose tests also run with -race (docs/testing.md
# records what it costs): add a package by its directory name.
race_packages="engine catalog store server generation route gcfloor"
go test -race -count=1 -timeout 45m "$@" $(for p in $race_packages; do echo "./internal/$p/..."; done)
