#!/usr/bin/env bash
# SIGINT drains the frames in flight and still writes the summary. The signal
# goes once the pipeline says it handles signals and frames are flowing (a
# fixed delay would kill a process still loading on a busy machine).
set -euo pipefail
vlcache="$1"; config="$2"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
cp "$config" . && config="$work/$(basename "$config")"  # its jsonl path is read from the config's folder
"$vlcache" run "$config" > out.txt 2>&1 &
pid=$!
for _ in $(seq 1200); do
  grep -q "^running:" out.txt && [ -f tiny_loop.jsonl ] && [ "$(wc -l < tiny_loop.jsonl)" -ge 10 ] && break
  kill -0 $pid 2>/dev/null || { echo "the pipeline exited early"; cat out.txt; exit 1; }
  sleep 0.1
done
grep -q "^running:" out.txt || { echo "the pipeline never said it was running"; cat out.txt; exit 1; }
kill -INT $pid
rc=0
wait $pid || rc=$?
cat out.txt
echo "exit status $rc after SIGINT"
exit $rc
