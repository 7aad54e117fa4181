#!/usr/bin/env bash
# Fails when the build or the tests used a system file from a Debian package that
# scripts/packages.txt neither lists nor pulls in through Depends/Pre-Depends, naming the
# package and the files that needed it. Run after the tests (.ci/run does):
#
#   bash scripts/check_packages.sh [--packages FILE] [BUILD_DIR]     (default build/)
#
# Debian's python3 (in the list), standard library only: scripts/check_packages.py.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/check_packages.py" "$@"
