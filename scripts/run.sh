#!/usr/bin/env bash
# Installs, builds, and runs the main job on the committed default model pair.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/specd generate --prompt "${1:-ROMEO:}" --max-tokens "${2:-96}"
