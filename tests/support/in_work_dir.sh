# Sourced by the process tests: $tests_dir, a scratch directory that goes (with every
# background job) when the script ends, and free_port, a loopback port
# nobody holds (a fixed one can sit in TIME_WAIT after a previous run).
tests_dir="$(cd "$(dirname "$0")/.." && pwd)"  # the tests/ folder (scripts live in tests/process), whatever the caller's directory
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
