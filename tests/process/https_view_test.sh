#!/usr/bin/env bash
# The live view and /metrics over HTTPS with a bearer token, a real pipeline
# on loopback: a self-signed certificate made by openssl; /healthz answers
# anyone, everything else 401 without the token (counted in /metrics), 200
# with it (header, or ?token= for the page); plain HTTP gets no answer.
# And a view beyond loopback validates with HTTPS and a token, not without.
set -euo pipefail
vlcache="$1"; video="$2"
source "$(dirname "$0")/../support/in_work_dir.sh"
port=$(free_port)
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" 2> /dev/null
openssl rand -hex 24 > token
view_keys='tls_cert = "cert.pem"
tls_key = "key.pem"
token_file = "token"'
cat > view.toml <<TOML
[pipeline]
name = "https"
progress_seconds = 0
drop_policy = "block"
[input]
image_size = 32
patch_size = 8
[encoder]
model = "tiny"
[[camera]]
name = "gate"
source = "$video"
max_frames = 20
[view]
http = "127.0.0.1:$port"
hold_s = 60
$view_keys
TOML
printf '[input]\nimage_size = 32\npatch_size = 8\n[encoder]\nmodel = "tiny"\n[[camera]]\nsource = "%s"\n[view]\nhttp = "0.0.0.0:%s"\n' \
  "$video" "$port" > wide.toml
if "$vlcache" validate wide.toml > wide.txt 2>&1; then echo "a bare view beyond loopback validated"; exit 1; fi
grep -q "\[view\].http: binds '0.0.0.0'" wide.txt || { cat wide.txt; exit 1; }
printf '%s\n' "$view_keys" >> wide.toml
"$vlcache" validate wide.toml > /dev/null || { echo "HTTPS with a token beyond loopback did not validate"; exit 1; }
"$vlcache" run view.toml > run.txt 2>&1 &
run=$!
for _ in $(seq 600); do grep -q "view: live page at https://" run.txt && break; sleep 0.1; done
grep -q "view: live page at https://127.0.0.1:$port/" run.txt || { echo "no HTTPS view"; cat run.txt; exit 1; }
/usr/bin/python3 - "$port" <<'PY'
import ssl, sys, urllib.error, urllib.request
port = sys.argv[1]
token = open("token").read().strip()
ctx = ssl.create_default_context(cafile="cert.pem")
base = f"https://127.0.0.1:{port}"
def get(path, auth=None):
    req = urllib.request.Request(base + path)
    if auth: req.add_header("Authorization", "Bearer " + auth)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
assert get("/healthz")[0] == 200, "healthz must stay open"
for path in ("/metrics", "/", "/api/state", "/frame/gate.jpg"):
    assert get(path)[0] == 401, f"{path} without the token"
assert get("/metrics", "x" * len(token))[0] == 401, "a wrong token"
status, metrics = get("/metrics", token)
assert status == 200 and "vlcache_up{" in metrics, status
assert get("/?token=" + token)[0] == 200, "the page with ?token="
status, metrics = get("/metrics", token)
line = [l for l in metrics.splitlines() if l.startswith("vlcache_http_unauthorized_total ")][0]
assert int(line.split()[1]) >= 5, line
try:
    urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)
    raise SystemExit("plain HTTP was answered")
except (urllib.error.URLError, ConnectionError, OSError):
    pass
print("https ok:", line)
PY
kill -INT $run
wait $run || { echo "the run failed"; cat run.txt; exit 1; }
