#!/usr/bin/env bash
# Builds pchronicle and queries the bundled example dataset (an ATIF
# trajectory, OpenAI chat conversations and a Codex CLI rollout).
# Usage: scripts/demo.sh ["SQL"]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
go build -ldflags "$(version_ldflags)" -o bin/pchronicle ./cmd/pchronicle
sql="${1:-SELECT _file_, source_format, agent_name, agent_model_name, step_count, tool_call_count, prompt_tokens, status FROM runs ORDER BY _file_, session_id}"
exec bin/pchronicle query examples/trajectories "$sql"
