#!/usr/bin/env bash
# The whole test suite: install, build, run every test.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/bootstrap.sh"
ctest --test-dir "$repo/build" --output-on-failure -j "$(nproc)"
