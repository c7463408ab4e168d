#!/usr/bin/env bash
# The OpenAI-style API of a running pipeline (the shipped scene model, one
# camera on a held-out rendered scene, paced at 1 frame/s):
#  - the official OpenAI Node client (npm install openai, into a temporary
#    folder) asks about camera://yard plain and streamed: the answers are the
#    scene's truth for the frames they name, usage counts cached tokens;
#  - `vlcache request` asked about the same frame gives the same answer;
#  - an image sent as a data URL gets the answer `vlcache ask` gives it;
#  - curl: 401 without the token, 404 for an unknown camera (naming it alone),
#    400 for bad image data, 413 for a question over the limit, 429 with
#    Retry-After over the client's rate, 409 from a pipeline without a
#    language model; /metrics counts the requests and refusals.
#   openai_api_test.sh VLCACHE REPO SCENE_FOLDER
set -euo pipefail
source "$(dirname "$0")/../support/in_work_dir.sh"
vlcache="$1"; repo="$2"; scene="$3"
port="$(free_port)"; zport="$(free_port)"
question="How many red shapes are there?"
token="api-test-token-0123456789"
echo "$token" > "$work/token"

cat > "$work/api.toml" <<TOML
[pipeline]
name = "api-test"
progress_seconds = 0

[encoder]
model = "$repo/models/tiny-llava-scenes"
batch_tokens = 64
batch_timeout_ms = 30

[llm]
model = "$repo/models/tiny-llava-scenes"
max_new_tokens = 4
every_n_frames = 10
request_endpoint = "tcp://127.0.0.1:$zport"

[view]
http = "127.0.0.1:$port"
token_file = "$work/token"
api_requests_per_s = 20
api_burst = 40

[[camera]]
name = "yard"
source = "$scene"
pace_fps = 1
TOML
"$vlcache" run "$work/api.toml" > "$work/run.log" 2>&1 &
pipeline=$!
trap 'kill -INT $pipeline 2>/dev/null || true; wait $pipeline 2>/dev/null || true; rm -rf "$work"' EXIT
auth=(-H "Authorization: Bearer $token")
base="http://127.0.0.1:$port"
# Wait for the camera's first frame (no fixed pause).
for _ in $(seq 300); do
  curl -sf "${auth[@]}" "$base/v1/cameras" 2>/dev/null | grep -q '"state":"live"' && break
  kill -0 $pipeline 2>/dev/null || { cat "$work/run.log"; exit 1; }
  sleep 0.1
done
curl -sf "${auth[@]}" "$base/v1/cameras" | grep -q '"state":"live"' || { echo "camera never live"; cat "$work/run.log"; exit 1; }

# The official client, installed fresh.
mkdir -p "$work/client"
cp "$tests_dir/process/openai_client.mjs" "$work/client/"
(cd "$work/client" && npm install --silent --no-audit --no-fund --no-save openai > npm.log 2>&1) \
  || { cat "$work/client/npm.log"; exit 1; }
known="$(python3 -c 'import json,sys; print(json.dumps([json.loads(l)["frame"] for l in open(sys.argv[1]) if sys.argv[2] in l]))' "$scene/truth.jsonl" "$question")"
KNOWN_FRAMES="$known" node "$work/client/openai_client.mjs" "$base/v1" "$token" yard "$question" "$scene/frames/000010.png" \
  > "$work/client.json"

# The same question over ZeroMQ, until both land on the same frame.
same=""
for _ in 1 2 3 4 5; do
  "$vlcache" request "127.0.0.1:$zport" --stream yard --question "$question" > "$work/zmq.json"
  curl -sf "${auth[@]}" -H 'Content-Type: application/json' "$base/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"$question\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"camera://yard\"}}]}]}" \
    > "$work/http.json"
  same="$(python3 - "$work/zmq.json" "$work/http.json" <<'PY'
import json, sys
z = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
h = json.load(open(sys.argv[2]))
if z["seq"] == h["vlcache"]["frame_seq"]:
    assert z["text"] == h["choices"][0]["message"]["content"], (z["text"], h["choices"][0]["message"]["content"])
    print("frame %d: request and API both say %r" % (z["seq"], z["text"]))
PY
)"
  [ -n "$same" ] && break
done
[ -n "$same" ] || { echo "request and API never asked about the same frame"; exit 1; }
echo "$same"

"$vlcache" ask --model "$repo/models/tiny-llava-scenes" --image "$scene/frames/000010.png" --question "$question" \
  --max-new-tokens 8 --json > "$work/ask.json"

python3 - "$work/client.json" "$scene/truth.jsonl" "$question" "$work/ask.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
truth = {}
for line in open(sys.argv[2]):
    j = json.loads(line)
    truth[j["frame"]] = {q["question"]: q["answer"] for q in j["questions"]}
question = sys.argv[3]
ask = json.load(open(sys.argv[4]))
assert got["models"] == ["tiny-llava-scenes"], got["models"]
for kind in ("plain", "streamed"):
    a = got[kind]
    want = truth[a["seq"]][question]
    assert a["text"].strip() == want, "%s: frame %d answered %r, truth %r" % (kind, a["seq"], a["text"], want)
    u = a["usage"]
    assert u["prompt_tokens"] > 100 and u["completion_tokens"] >= 1, u
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], u
    assert a["finish_reason"] == "stop", a
    print("%s: frame %d -> %r (truth %r), prompt %d tokens, %d cached" %
          (kind, a["seq"], a["text"], want, u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]))
s = got["streamed"]
assert s["content_chunks"] >= 1 and s["chunks"] >= s["content_chunks"] + 2, s
assert s["usage"]["prompt_tokens_details"]["cached_tokens"] > 0, "the second question reused no K/V: %r" % s["usage"]
assert got["image"]["text"] == ask["text"], "data URL %r, vlcache ask %r" % (got["image"]["text"], ask["text"])
assert got["image"]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, got["image"]
print("image: data URL and vlcache ask both say %r (truth %r)" % (ask["text"], truth[10][question]))
u = got["unknown_camera"]
assert u["status"] == 404 and "no-such-camera" in u["message"] and "yard" not in u["message"], u
print("client: unknown camera -> 404")
PY

# The Python example (standard library only), plain and streamed, and with an image file.
python3 "$repo/examples/ask_over_http.py" "$base" --camera yard --question "$question" --token-file "$work/token" \
  > "$work/example.txt"
python3 "$repo/examples/ask_over_http.py" "$base" --camera yard --question "$question" --token-file "$work/token" \
  --stream > "$work/example_stream.txt"
python3 "$repo/examples/ask_over_http.py" "$base" --image "$scene/frames/000010.png" --question "$question" \
  --token-file "$work/token" > "$work/example_image.txt"
python3 - "$work" "$scene/truth.jsonl" "$question" "$work/ask.json" <<'PY'
import json, re, sys
work, truth_file, question, ask = sys.argv[1:]
truth = {json.loads(l)["frame"]: {q["question"]: q["answer"] for q in json.loads(l)["questions"]} for l in open(truth_file)}
for name in ("example.txt", "example_stream.txt"):
    lines = open(work + "/" + name).read().splitlines()
    seq = int(re.match(r"about yard frame (\d+)", lines[1]).group(1))
    assert re.match(r"tokens: prompt \d+ \(\d+ cached\), answer \d+", lines[2]), lines
    if question in truth[seq]:
        assert lines[0].strip() == truth[seq][question], (name, lines, truth[seq][question])
    print("example %s: %r about frame %d" % (name, lines[0], seq))
image = open(work + "/example_image.txt").read().splitlines()
assert image[0] == json.load(open(ask))["text"], image
print("example: the image answered %r, as vlcache ask" % image[0])
PY

# Each error status, with curl.
status() {  # expected status, then curl's arguments
  local want="$1"; shift
  local got
  got="$(curl -s -o "$work/body" -w '%{http_code}' "$@")"
  [ "$got" = "$want" ] || { echo "wanted $want, got $got: $*"; cat "$work/body"; exit 1; }
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["message"] and e["type"], e' "$work/body"
}
chat=(-H 'Content-Type: application/json' "$base/v1/chat/completions")
body() { printf '{"messages":[{"role":"user","content":[{"type":"text","text":"%s"},{"type":"image_url","image_url":{"url":"%s"}}]}]}' "$1" "$2"; }
status 401 "${chat[@]}" -d "$(body "$question" camera://yard)"
status 401 -H "Authorization: Bearer wrong-token-0123456789" "${chat[@]}" -d "$(body "$question" camera://yard)"
status 404 "${auth[@]}" "${chat[@]}" -d "$(body "$question" camera://gate)"
grep -q "gate" "$work/body" && ! grep -q "yard" "$work/body"
status 400 "${auth[@]}" "${chat[@]}" -d "$(body "$question" 'data:image/png;base64,bm90IGFuIGltYWdl')"
status 413 "${auth[@]}" "${chat[@]}" -d "$(body "$(head -c 5000 /dev/zero | tr '\0' 'a')" camera://yard)"
echo "curl: 401, 404, 400, 413 as expected"
# Over the client's rate (20 a second, 40 at once; every /v1 path counts): a
# burst of 100 meets 429s. /metrics is not held to it.
urls=(); for _ in $(seq 100); do urls+=("$base/v1/models" -o /dev/null); done
curl -s --parallel --parallel-immediate --parallel-max 100 "${auth[@]}" \
  -w '%{http_code} %header{retry-after}\n' "${urls[@]}" > "$work/codes"
grep -q '^429 [0-9]' "$work/codes" || { echo "no request was refused for its rate"; sort "$work/codes" | uniq -c; exit 1; }
echo "curl: a burst of 100 -> $(grep -c '^429 [0-9]' "$work/codes") refused with 429 and Retry-After"
curl -sf "${auth[@]}" "$base/metrics" > "$work/metrics"
grep -q 'vlcache_api_refused_total{reason="rate"} [1-9]' "$work/metrics"
grep -q 'vlcache_api_refused_total{reason="question_size"} 1' "$work/metrics"
grep -q 'vlcache_api_requests_total{path="/v1/chat/completions",status="200"} [1-9]' "$work/metrics"
grep -q 'vlcache_api_tokens_total{kind="cached_prompt"} [1-9]' "$work/metrics"
echo "metrics: requests, refusals and cached tokens counted"
kill -INT $pipeline; wait $pipeline || true

# A pipeline without a language model: 409.
sed -e '/^\[llm\]/,/^$/d' "$work/api.toml" > "$work/no_llm.toml"
"$vlcache" run "$work/no_llm.toml" > "$work/run2.log" 2>&1 &
pipeline=$!
for _ in $(seq 300); do curl -sf "${auth[@]}" "$base/healthz" > /dev/null 2>&1 && break; sleep 0.1; done
status 409 "${auth[@]}" "${chat[@]}" -d "$(body "$question" camera://yard)"
echo "curl: 409 without a language model"
echo "openai api: all checks passed"
