#!/usr/bin/env bash
# Installs specd's build dependencies (Debian bookworm packages only) and builds it
# into build/. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential clang-16 cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-pthread
  libboost1.81-dev libboost-json1.81-dev
  libsimdjson-dev libsentencepiece-dev sentencepiece
  doctest-dev libcli11-dev libpcre2-dev
  libtomlplusplus-dev   # specd serve's configuration (conf/specd.toml)
  libfuzzer-16-dev libclang-rt-16-dev  # -fsanitize=fuzzer,address,undefined (the protocol parser fuzz target): libclang_rt.fuzzer and asan archives
  python3 python3-websockets  # the gateway's Python WebSocket client test
  chromium              # the chat page test drives it headless (tests/web/)
)
# node + npm fetch the Llama 3 tokenizer fixtures' source (scripts/fetch_llama3_tokenizer.sh)
# and the real clients of the loopback tests (scripts/fetch_test_clients.sh); node runs them.
# Only when npm is missing: a NodeSource nodejs already bundles npm and conflicts with Debian's.
command -v npm > /dev/null || packages+=(nodejs npm)
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

scripts/fetch_llama3_tokenizer.sh
scripts/fetch_test_clients.sh

build_type=${SPECD_BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_COMPILER=clang++-16 > /dev/null
cmake --build build -j "$(nproc)"
