#!/usr/bin/env bash
# CURVE on the pipeline's ZeroMQ sockets, real processes on loopback. Keys
# from `vlcache keygen`; the pipeline allows one camera and one listener.
# Checks: the allowed camera's 40 frames all get in and are published to the
# allowed listener; a camera with an unknown key and one with no key at all,
# sending at the same time, get nothing in (the unknown key is logged with
# its address and counted); a listener without a key receives nothing. A
# patch-shipping camera with the allowed key gets in the same way.
set -euo pipefail
vlcache="$1"; video="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
ingest=$(free_port); sink=$(free_port)
source "$tests_dir/support/keyed_ingest.sh"
"$vlcache" keygen stranger > /dev/null
start_keyed_ingest "$vlcache" "$ingest" "" "kind = \"zmq\"
endpoint = \"tcp://127.0.0.1:$sink\"" camera listener
keys="--key allowed/listener.key --server-key pipeline.pub"
"$vlcache" listen "tcp://127.0.0.1:$sink" --stream good --each 5 --timeout-s 150 $keys > listen.txt 2> listen_err.txt &
listener=$!
rc=0
"$vlcache" listen "tcp://127.0.0.1:$sink" --count 1 --timeout-s 20 > keyless_listen.txt 2>&1 &
keyless=$!
cam="--source $video --to tcp://127.0.0.1:$ingest --fps 20"
"$vlcache" camera $cam --stream bad --frames 40 --key stranger.key --server-key pipeline.pub > bad.txt 2>&1 &
bad=$!
"$vlcache" camera $cam --stream plain --frames 40 > plain.txt 2>&1 &
plain=$!
# Wait until the listener is served (its handshake done, its subscription
# sent) before the allowed camera starts: PUB/SUB drops what a late joiner
# missed (under heavy load the listener once joined after the 10 frames).
for _ in $(seq 1200); do grep -q "listen: connected" listen_err.txt && break; sleep 0.1; done
grep -q "listen: connected" listen_err.txt || { echo "the allowed listener never connected"; cat listen_err.txt; exit 1; }
"$vlcache" camera $cam --stream good --frames 10 --key allowed/camera.key --server-key pipeline.pub > good1.txt 2>&1
for _ in $(seq 1200); do grep -q "^good {" listen.txt && break; sleep 0.1; done
grep -q "^good {" listen.txt || { echo "the allowed listener got nothing"; cat pipeline.txt; exit 1; }
"$vlcache" camera $cam --stream good --start 10 --frames 30 --key allowed/camera.key --server-key pipeline.pub > good2.txt 2>&1
# The patch-shipping camera goes through the same authenticated socket.
"$vlcache" camera $cam --stream porch --frames 10 --ship-patches --image-size 32 --patch-size 8 \
  --key allowed/camera.key --server-key pipeline.pub > porch.txt 2>&1
wait $bad $plain
wait $listener || { echo "the allowed listener failed"; cat listen.txt listen_err.txt; exit 1; }
if wait $keyless; then echo "a listener without a key received lines"; cat keyless_listen.txt; exit 1; fi
wait $pipeline
grep -v '^{' pipeline.txt
grep -qF "refused peer 127.0.0.1 (CURVE key $(sed -n 's/public-key = "\(.*\)"/\1/p' stranger.pub))" pipeline.txt \
  || { echo "the unknown key was not logged with its address"; exit 1; }
/usr/bin/python3 - summary.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
names = sorted(x["name"] for x in s["streams"])
assert names == ["good", "porch"], f"streams that got in: {names}"
good = [x for x in s["streams"] if x["name"] == "good"][0]
porch = [x for x in s["streams"] if x["name"] == "porch"][0]
assert porch["frames_read"] == 10, porch
# All 40 got in (a busy pipeline may drop some by its flow policy: counted).
assert good["frames_read"] == 40 and good["lost_in_transit"] == 0 and good["frames_encoded"] >= 20, good
assert s["auth_refused"] >= 1, s.get("auth_refused")
assert s["accounted"], "frames unaccounted"
print(f"secure ok: good 40 of 40 frames in ({good['frames_encoded']} encoded), {s['auth_refused']} refusals, nothing from bad, plain or the keyless listener")
PY
