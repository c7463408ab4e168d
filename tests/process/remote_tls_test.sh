#!/usr/bin/env bash
# The remote encoder link over mutual TLS, real processes on loopback: one
# CA (openssl) signs the nodes' certificates, another the pipelines', and
# each side trusts only the other's CA (docs/security.md). A pipeline with
# its certificate encodes through the node; one without TLS and one whose
# certificate a third CA signed are refused, and the node keeps serving (a
# last good pipeline runs after them). A node that presents a pipeline's
# certificate is refused by the pipeline: a pipeline cannot pose as a node.
set -euo pipefail
vlcache="$1"; video="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
port=$(free_port)
ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -days 2 -subj "/CN=$1" 2> /dev/null; }
signed() {  # name, ca
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2> /dev/null
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" -days 2 2> /dev/null
}
ca node-ca; ca pipeline-ca; ca rogue-ca
signed node node-ca; signed pipeline pipeline-ca; signed intruder rogue-ca
pipeline() {  # name, [encoder] tls lines
  cat > "$1.toml" <<TOML
[pipeline]
name = "$1"
progress_seconds = 0
drop_policy = "block"
[input]
image_size = 32
patch_size = 8
[encoder]
remote = "127.0.0.1:${3:-$port}"
remote_timeout_s = 10
$2
[[camera]]
name = "gate"
source = "$video"
max_frames = 20
[[sink]]
kind = "jsonl"
path = "$1.jsonl"
TOML
}
tls() { printf 'tls_cert = "%s.crt"\ntls_key = "%s.key"\ntls_ca = "node-ca.crt"\n' "$1" "$1"; }
pipeline good "$(tls pipeline)"
pipeline plain ""
pipeline intruder "$(tls intruder)"
pipeline again "$(tls pipeline)"
"$vlcache" node --role encoder --listen "$port" --model tiny --tls-cert node.crt --tls-key node.key \
  --tls-ca pipeline-ca.crt > node.txt 2>&1 &
for _ in $(seq 600); do grep -q "listening" node.txt && break; sleep 0.1; done
grep -q "listening on 127.0.0.1:$port (TLS" node.txt || { echo "node never listened"; cat node.txt; exit 1; }
timeout 60 "$vlcache" run good.toml --summary-json good.json > good.txt 2>&1 || { cat good.txt; exit 1; }
for bad in plain intruder; do
  if timeout 60 "$vlcache" run "$bad.toml" > "$bad.txt" 2>&1; then echo "the $bad pipeline was served"; cat "$bad.txt"; exit 1; fi
  grep -q "cannot reach the encoder node" "$bad.txt" || { echo "$bad: not refused at the handshake"; cat "$bad.txt"; exit 1; }
  [ ! -s "$bad.jsonl" ] || { echo "$bad: frames came back"; exit 1; }
done
timeout 60 "$vlcache" run again.toml --summary-json again.json > again.txt 2>&1 || { echo "the node stopped serving"; cat again.txt; exit 1; }
# A "node" holding a pipeline's certificate: the pipeline trusts only the nodes' CA.
poser_port=$(free_port)
"$vlcache" node --role encoder --listen "$poser_port" --model tiny --tls-cert pipeline.crt --tls-key pipeline.key \
  --tls-ca pipeline-ca.crt > poser.txt 2>&1 &
for _ in $(seq 600); do grep -q "listening" poser.txt && break; sleep 0.1; done
pipeline fooled "$(tls pipeline)" "$poser_port"
if timeout 60 "$vlcache" run fooled.toml > fooled.txt 2>&1; then echo "a pipeline's certificate posed as a node"; exit 1; fi
grep -q "cannot reach the encoder node" fooled.txt || { echo "fooled: not refused at the handshake"; cat fooled.txt; exit 1; }
[ ! -s fooled.jsonl ] || { echo "fooled: frames came back from the poser"; exit 1; }
/usr/bin/python3 - good.json again.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    s = json.load(open(path))
    assert s["encoder_remote"], path
    assert s["streams"][0]["frames_encoded"] == 20, (path, s["streams"][0])
PY
echo "tls ok: 20 frames over TLS twice; a plain pipeline and another CA's certificate refused"
