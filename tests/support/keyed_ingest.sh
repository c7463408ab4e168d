# Sourced by the CURVE process tests (after in_work_dir.sh): key pairs made
# with `vlcache keygen` (pipeline.key, allowed/NAME.key for each name given;
# only allowed/*.pub are let in) and a network-ingest pipeline using them,
# run in the background until its streams go idle.
#   start_keyed_ingest VLCACHE INGEST_PORT "EXTRA [ingest] LINES" "SINK TABLE" NAME...
# sets $pipeline (its pid) once it listens; its output goes to pipeline.txt.
start_keyed_ingest() {
  local vlcache="$1" port="$2" ingest_extra="$3" sink="$4"
  shift 4
  mkdir -p allowed
  "$vlcache" keygen pipeline > /dev/null
  for name in "$@"; do "$vlcache" keygen "allowed/$name" > /dev/null; done
  cat > pipeline.toml <<TOML
[pipeline]
name = "keyed"
progress_seconds = 0
[input]
image_size = 32
patch_size = 8
[encoder]
model = "tiny"
[ingest]
endpoint = "tcp://127.0.0.1:$port"
idle_timeout_s = 20
stop_when_idle = true
$ingest_extra
[security]
secret_key = "pipeline.key"
allowed_clients = "allowed"
[[sink]]
$sink
TOML
  "$vlcache" run pipeline.toml --summary-json summary.json > pipeline.txt 2>&1 &
  pipeline=$!
  for _ in $(seq 600); do grep -q "ingest: listening" pipeline.txt && return 0; sleep 0.1; done
  echo "pipeline never listened"; cat pipeline.txt; exit 1
}
