#!/usr/bin/env bash
# The ingest under attack, real processes on loopback. Without CURVE (a peer
# is its address): 16 undecodable frames under new names hold no stream slot
# (a good camera from the same host gets in); JPEGs of 4096x4096 under a
# 64x48 header are refused before decoding (resident memory grows < 50 MB);
# 20000 malformed messages, each with its own error text, write a bounded
# log and bounded counters; names that are not UTF-8 or hold control
# characters are refused and the run ends with its summary. With CURVE: a
# camera's stream is its own (another allowed key is refused), and an
# allow-list entry's streams line bounds what its key may open.
#   ingest_attacks_test.sh VLCACHE VIDEO SEND_GARBAGE
set -euo pipefail
vlcache="$1"; video="$2"; garbage="$3"
source "$(dirname "$0")/../support/in_work_dir.sh"
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# --- Without CURVE ---
port=$(free_port)
cat > open.toml <<TOML
[pipeline]
name = "attacked"
progress_seconds = 0
[input]
image_size = 32
patch_size = 8
[encoder]
model = "tiny"
[ingest]
endpoint = "tcp://127.0.0.1:$port"
idle_timeout_s = 120
max_streams_per_peer = 4
max_fps_per_peer = 10000
TOML
hport=$(free_port)
"$vlcache" run open.toml --summary-json open.json --http 127.0.0.1:$hport > open.txt 2>&1 &
pipeline=$!
for _ in $(seq 600); do grep -q "ingest: listening" open.txt && break; sleep 0.1; done
grep -q "ingest: listening" open.txt || { echo "pipeline never listened"; cat open.txt; exit 1; }
# The sum of the /metrics samples whose line starts with $1 (a regex).
metric() { curl -sf http://127.0.0.1:$hport/metrics | awk -v re="^$1" '$0 ~ re {s += $NF} END {print s + 0}'; }
# Waits (at most 60 s) until metric $1 reaches $2: the pipeline has handled what was sent.
await() {
  for _ in $(seq 600); do [ "$(metric "$1")" -ge "$2" ] && return 0; sleep 0.1; done
  echo "metric $1 stayed at $(metric "$1"), expected >= $2"; exit 1
}
"$garbage" tcp://127.0.0.1:$port slots 16
await 'vlcache_ingest_rejected_total[{]reason="undecodable image"' 16
"$vlcache" camera --source "$video" --to tcp://127.0.0.1:$port --stream good --frames 10 --fps 20 > good.txt 2>&1
sent=$(sed -n "s/^camera 'good': \([0-9]*\) frames sent.*/\1/p" good.txt)
await 'vlcache_frames_read_total[{]stream="good"' "$sent"
before=$(rss_kb $pipeline)
"$garbage" tcp://127.0.0.1:$port bomb 30
"$garbage" tcp://127.0.0.1:$port flood 20000
"$garbage" tcp://127.0.0.1:$port badname
# Every message counted (the refusals are in /metrics while the run goes on, by reason).
await 'vlcache_ingest_rejected_total' $((16 + 30 + 20000 + 3))
after=$(rss_kb $pipeline)
kill -INT $pipeline  # the run ends here (not by idling out: under load the probes take their time)
wait $pipeline || { cat open.txt; echo "the attacked run failed"; exit 1; }
grep -v '^good #' open.txt | head -40
[ -s open.json ] || { echo "no summary written"; exit 1; }
! grep -q '^running: forged' open.txt || { echo "a stream name forged a log line"; exit 1; }
lines=$(grep -c '^ingest: rejected' open.txt || true)
/usr/bin/python3 - open.json "$before" "$after" "$lines" "$sent" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
before, after, lines, sent = (int(x) for x in sys.argv[2:6])
names = sorted(x["name"] for x in s["streams"])
assert names == ["good"], f"streams opened: {names}"
good = s["streams"][0]
assert sent >= 5 and good["frames_read"] == sent, f"the good camera after 16 undecodable frames: {good['frames_read']} of {sent}"
rej = s["ingest"]["rejected"]
assert len(rej) <= 8, f"counters by reason, bounded: {sorted(rej)}"
assert rej.get("undecodable image", 0) >= 16 + 30, rej
# Past the peer's rate (10000/s) a message is refused unread, which is cheaper still.
assert rej.get("malformed message", 0) + rej.get("peer over its message rate", 0) >= 20000 + 3, rej
growth_mb = (after - before) / 1024
assert growth_mb < 50, f"resident memory grew {growth_mb:.0f} MB under 30 JPEG bombs"
assert lines <= 60, f"{lines} log lines for 20049 refusals"
print(f"open ok: good {sent} of {sent} in after 16 undecodable; bombs +{growth_mb:.1f} MB; {lines} log lines; rejected {rej}")
PY

# --- With CURVE ---
port=$(free_port)
source "$tests_dir/support/keyed_ingest.sh"
mkdir -p allowed
"$vlcache" keygen allowed/limited > /dev/null
echo 'streams = "c"' >> allowed/limited.pub
start_keyed_ingest "$vlcache" "$port" "" 'kind = "console"' alice bob
cam() { "$vlcache" camera --source "$video" --to tcp://127.0.0.1:$port --fps 20 --server-key pipeline.pub "$@"; }
cam --stream a --frames 20 --key allowed/alice.key > alice.txt 2>&1
cam --stream a --frames 10 --key allowed/bob.key > bob.txt 2>&1         # bob writes into alice's stream
cam --stream d --frames 5 --key allowed/limited.key > limited.txt 2>&1  # a stream its entry does not name
cam --stream c --frames 5 --key allowed/limited.key > limited_c.txt 2>&1
wait $pipeline || { cat pipeline.txt; echo "the keyed run failed"; exit 1; }
/usr/bin/python3 - summary.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
streams = {x["name"]: x for x in s["streams"]}
assert sorted(streams) == ["a", "c"], sorted(streams)
assert streams["a"]["frames_read"] == 20, f"stream a read {streams['a']['frames_read']}: another key wrote into it"
assert streams["c"]["frames_read"] == 5, streams["c"]
rej = s["ingest"]["rejected"]
assert rej.get("stream owned by another peer") == 10, rej
assert rej.get("stream not in the peer's allow-list entry") == 5, rej
print(f"keyed ok: a 20 of 20 (bob's 10 refused), d refused for its key, c admitted; rejected {rej}")
PY
echo "ingest attacks ok"
