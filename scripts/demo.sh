#!/usr/bin/env bash
# Builds pchronicle and runs it on the bundled example dataset.
# Usage: scripts/demo.sh [extra pchronicle args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
go build -o bin/pchronicle ./cmd/pchronicle
exec bin/pchronicle inspect examples/trajectories "$@"
