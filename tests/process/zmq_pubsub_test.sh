#!/usr/bin/env bash
# A pipeline publishing on a zmq sink and a separate listener process: the
# listener gets lines of both streams, each stream in order. No sleeps: the
# cameras loop, so the listener's wait for its N lines is the handshake.
set -euo pipefail
vlcache="$1"; config="$2"; out="$(mktemp)"
"$vlcache" run "$config" > /dev/null &
pipeline=$!
trap 'kill -INT $pipeline 2>/dev/null || true' EXIT
"$vlcache" listen tcp://127.0.0.1:5591 --count 400 --timeout-s 60 > "$out"
# The two consumer examples on the same live feed.
if [ -n "${3:-}" ]; then
  timeout 60 "$3" tcp://127.0.0.1:5591 a 5 > "$out.cpp"
  [ "$(grep -c "tokens recomputed" "$out.cpp")" = 5 ] || { echo "C++ consumer example failed"; exit 1; }
fi
if [ -n "${4:-}" ]; then
  timeout 60 /usr/bin/python3 "$4" tcp://127.0.0.1:5591 b 5 > "$out.py"
  [ "$(grep -c "tokens recomputed" "$out.py")" = 5 ] || { echo "Python consumer example failed"; exit 1; }
fi
kill -INT $pipeline
wait $pipeline
trap - EXIT
lines=$(wc -l < "$out")
for s in a b; do
  grep -q "^$s {" "$out" || { echo "no lines for stream $s"; exit 1; }
  # per-stream order: seq strictly increasing
  grep "^$s {" "$out" | sed 's/.*"seq":\([0-9]*\).*/\1/' | awk 'NR>1 && $1<=prev {bad=1} {prev=$1} END {exit bad}' \
    || { echo "stream $s out of order"; exit 1; }
done
echo "zmq: $lines lines received, both streams in order"
rm -f "$out" "$out.cpp" "$out.py"
