#!/usr/bin/env bash
# Installs, builds what serving needs, and serves the committed default model pair:
# `specd serve` on the default host and port of conf/specd.toml (127.0.0.1:8080),
# printing the URL. Ctrl-C (SIGINT) or SIGTERM stops it gracefully. Extra arguments go
# to `specd serve` (e.g. --port 9000, --token SECRET).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh serve
exec ./build/specd serve --config conf/specd.toml "$@"
