#!/usr/bin/env bash
# Installs specd's Debian packages (scripts/packages.txt; bookworm packages only) and
# builds it into build/. Idempotent: a second run only rebuilds what changed.
#
#   bash scripts/setup.sh          everything: the npm test fixtures and clients, every target
#   bash scripts/setup.sh serve    what `specd serve` needs: specd and the sentencepiece
#                                  shim it dlmopens (scripts/run.sh), so a test-only target
#                                  can never stop the server from building
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-all}
case "$mode" in
  all | serve) ;;
  *) echo "usage: scripts/setup.sh [serve]" >&2; exit 2 ;;
esac

mapfile -t packages < <(sed 's/#.*//' scripts/packages.txt | tr -s ' \t' '\n' | sed '/^$/d')
# A NodeSource nodejs already bundles npm and conflicts with Debian's npm; Debian's nodejs does not.
command -v npm > /dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$mode" = all ]; then
  scripts/fetch_llama3_tokenizer.sh
  scripts/fetch_qwen3_llama2_tokenizers.sh
  scripts/fetch_test_clients.sh
fi

# binutils' ar and ranlib (clang-16 depends on binutils): left to itself CMake takes any
# llvm-ar on PATH, from a package this list does not install.
build_type=${SPECD_BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_AR=/usr/bin/ar -DCMAKE_RANLIB=/usr/bin/ranlib > /dev/null
if [ "$mode" = serve ]; then
  cmake --build build -j "$(nproc)" --target specd specd_spm_shim
else
  cmake --build build -j "$(nproc)"
fi
