#!/usr/bin/env bash
# A pipeline with a language model (the tiny LLaVA snapshot from the fixtures:
# vision tower, projector, LLaMA decoder and tokenizer read from files):
# answers for both cameras arrive on the zmq sink in per-stream order, later
# ones reuse KV (and the frames between answers keep it current); on-demand
# questions come back over REQ/REP; bad requests get an error and the
# pipeline goes on; the summary accounts for every answer.
set -euo pipefail
vlcache="$1"; fixtures="$2"; video="$3"
work="$(mktemp -d)"
cat > "$work/llm.toml" <<TOML
[pipeline]
name = "llm"
max_in_flight = 2
drop_policy = "block"
progress_seconds = 0

[input]
image_size = 32
patch_size = 8

[encoder]
model = "$fixtures/llama_tiny/llava_new"
batch_tokens = 8
batch_timeout_ms = 5

[llm]
question = "How many people walk past the camera?"
max_new_tokens = 6
every_n_frames = 4
keep_kv_current = true
request_endpoint = "tcp://127.0.0.1:5596"

[[camera]]
name = "a"
source = "$video"
loop = true

[[camera]]
name = "b"
source = "$video"
start_frame = 400
loop = true

[[sink]]
kind = "zmq"
endpoint = "tcp://127.0.0.1:5595"
TOML
"$vlcache" run "$work/llm.toml" --summary-json "$work/summary.json" > "$work/run.log" 2>&1 &
pipeline=$!
trap 'kill -INT $pipeline 2>/dev/null || true; rm -rf "$work"' EXIT
"$vlcache" listen tcp://127.0.0.1:5595 --count 600 --timeout-s 90 > "$work/lines"
for s in a b; do
  grep "^$s {" "$work/lines" | grep '"kind":"answer"' > "$work/answers.$s" || { echo "no answers for stream $s"; exit 1; }
  sed 's/.*"seq":\([0-9]*\).*/\1/' "$work/answers.$s" | awk 'NR>1 && $1<=prev {bad=1} {prev=$1} END {exit bad}' \
    || { echo "answers of stream $s out of order"; exit 1; }
done
grep -q '"full_prefill":false' "$work/answers.a" || { echo "no answer reused KV"; exit 1; }
grep -q '"token_ids":\[[0-9]' "$work/answers.a" || { echo "answers without tokens"; exit 1; }

reply="$("$vlcache" request tcp://127.0.0.1:5596 --stream b --question "Is the door open?" --timeout-s 60)"
echo "$reply" | grep -q '"on_demand":true' || { echo "on-demand reply: $reply"; exit 1; }
echo "$reply" | grep -q '"question":"Is the door open?"' || { echo "on-demand reply: $reply"; exit 1; }
if "$vlcache" request tcp://127.0.0.1:5596 --stream nobody --question "hello?" > "$work/unknown" 2>&1; then
  echo "a question about an unknown stream succeeded"; exit 1
fi
grep -q "no frame of stream 'nobody'" "$work/unknown" || { cat "$work/unknown"; exit 1; }
/usr/bin/python3 - <<'PY'
import json, zmq
ctx = zmq.Context()
for body in (b"not json", b'{"stream": "a"}'):
    s = ctx.socket(zmq.REQ); s.setsockopt(zmq.LINGER, 0); s.setsockopt(zmq.RCVTIMEO, 30000)
    s.connect("tcp://127.0.0.1:5596"); s.send(body)
    reply = json.loads(s.recv())
    assert "error" in reply, reply
    s.close()
PY
long_question="$(printf 'why %.0s' $(seq 300))"
if "$vlcache" request tcp://127.0.0.1:5596 --stream a --question "$long_question" > "$work/long" 2>&1; then
  echo "a question longer than the context was answered"; exit 1
fi
grep -q "overflows the context" "$work/long" || { cat "$work/long"; exit 1; }
# HOST:PORT without tcp:// is the same endpoint.
reply="$("$vlcache" request 127.0.0.1:5596 --stream a --question "Still there?" --timeout-s 60)"
echo "$reply" | grep -q '"kind":"answer"' || { echo "no answer after bad requests: $reply"; exit 1; }

kill -INT $pipeline
wait $pipeline || { cat "$work/run.log"; exit 1; }
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
a = s["answers"]
assert a["answered"] >= 4, a
assert a["on_demand"] == 2 and a["requests"] == {"served": 2, "rejected": 4}, a
assert a["failed"] == 1, a  # the question that overflowed the context, alone
assert set(a["per_stream"]) == {"a", "b"}, a
assert s["accounted"], s
assert a["kv_updates"] > 0 and a["kv_updates_failed"] == 0, a  # three frames in four are updates
print("llm pipeline: %d answers (%d on demand), prefill p50 %.2f ms, %d K/V updates" %
      (a["answered"], a["on_demand"], a["prefill_ms_p50"], a["kv_updates"]))
PY
