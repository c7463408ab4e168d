#!/usr/bin/env python3
"""Soak benchmark (not part of CI): N looping cameras paced like live ones
through the sample-video pipeline (configs/vtest.toml: ViT-B/16-shaped encoder, LLaMA-shaped answers,
random weights) for T minutes, sampling the process's resident memory and
/metrics every few seconds; then SIGINT, and the run summary must account
for every frame.

    /usr/bin/python3 scripts/soak.py --cameras 8 --minutes 30
    [--fps 2] [--sample-s 10] [--port 8937] [--out build/soak]

Writes OUT/soak.toml (the pipeline), OUT/samples.jsonl (one sample a line),
OUT/summary.json (the run's) and OUT/soak.json (the verdict: memory at the
start and end of the second half and its slope, frames read, encoded and
dropped, answers, accounted). Exits 1 when a frame went unaccounted, the
pipeline failed, or resident memory grew by more than --max-growth (share)
over the second half of the run.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIDEO = "/usr/share/doc/opencv-doc/examples/data/vtest.avi"


def pipeline_toml(cameras, fps, port, frames_path):
    head = f"""# Written by scripts/soak.py: the sample-video pipeline (configs/vtest.toml) with looping, paced cameras.
[pipeline]
name = "soak"
max_in_flight = 2
queue = 2
drop_policy = "drop_oldest"
hashers = 2
shards = 2
progress_seconds = 60

[input]
image_size = 224
patch_size = 16

[gate]
mad = 3.0

[drift]
max_token_age = 50

[encoder]
model = "vit-b16"
batch_tokens = 64
batch_timeout_ms = 30

[llm]
tokenizer = "{REPO}/tests/fixtures/llama_tiny/tokenizer.model"
question = "How many people are in the hall?"
max_new_tokens = 12
every_n_frames = 10

[view]
http = "127.0.0.1:{port}"

[[sink]]
kind = "jsonl"
path = "{frames_path}"
"""
    cams = "".join(f"""
[[camera]]
name = "cam{i}"
source = "{VIDEO}"
start_frame = {(97 * i) % 700}
loop = true
pace_fps = {fps}
""" for i in range(cameras))
    return head + cams


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    totals = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"([a-z_]+)(\{[^}]*\})? ([-0-9.e+]+)$", line)
        if m:
            totals[m.group(1)] = totals.get(m.group(1), 0.0) + float(m.group(3))
    return totals


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS")


def slope_per_min(points):
    """Least-squares slope of (seconds, value) pairs, per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    return 60.0 * sum((p[0] - mx) * (p[1] - my) for p in points) / sxx if sxx else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cameras", type=int, default=8)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--fps", type=float, default=2.0, help="frames per second each camera delivers")
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--port", type=int, default=8937)
    ap.add_argument("--max-growth", type=float, default=0.05,
                    help="largest allowed growth of resident memory over the second half (share)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "soak"))
    ap.add_argument("--vlcache", default=os.path.join(REPO, "build", "vlcache"))
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    toml = os.path.join(a.out, "soak.toml")
    with open(toml, "w") as f:
        f.write(pipeline_toml(a.cameras, a.fps, a.port, os.path.join(a.out, "frames.jsonl")))
    log = open(os.path.join(a.out, "run.log"), "w")
    summary_path = os.path.join(a.out, "summary.json")
    proc = subprocess.Popen([a.vlcache, "run", toml, "--summary-json", summary_path], stdout=log,
                            stderr=subprocess.STDOUT, cwd=REPO)
    # Handshake: the view answers once the pipeline runs.
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{a.port}/healthz", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"soak: the pipeline exited early ({proc.returncode}); see {log.name}")
            time.sleep(0.1)
    else:
        proc.kill()
        sys.exit("soak: the live view never answered")

    started = time.monotonic()
    samples = []
    with open(os.path.join(a.out, "samples.jsonl"), "w") as out:
        while time.monotonic() - started < a.minutes * 60:
            time.sleep(a.sample_s)
            if proc.poll() is not None:
                break
            try:
                m = metrics(a.port)
            except OSError as e:
                m = {"error": str(e)}
            s = {"t_s": round(time.monotonic() - started, 1), "rss_mb": round(rss_mb(proc.pid), 1),
                 "read": m.get("vlcache_frames_read_total"), "encoded": m.get("vlcache_frames_encoded_total"),
                 "dropped": m.get("vlcache_frames_dropped_total"), "in_flight": m.get("vlcache_frames_in_flight"),
                 "answers": m.get("vlcache_answers_total"), "store_bytes": m.get("vlcache_token_store_bytes")}
            samples.append(s)
            out.write(json.dumps(s) + "\n")
            out.flush()
            busy = "busy" if s["answers"] is None else int(s["answers"])  # the answerer was mid-batch
            print(f"soak: {s['t_s']:7.0f} s  rss {s['rss_mb']:7.1f} MB  read {s['read']:.0f}  encoded {s['encoded']:.0f}  "
                  f"dropped {s['dropped']:.0f}  answers {busy}", flush=True)
    crashed = proc.poll() is not None
    if not crashed:
        proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -9
    log.close()

    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    half = [(s["t_s"], s["rss_mb"]) for s in samples if s["t_s"] >= a.minutes * 30]
    first, last = (half[0][1], half[-1][1]) if half else (0.0, 0.0)
    growth = (last - first) / first if first else 0.0
    streams = summary.get("streams", [])
    verdict = {
        "cameras": a.cameras, "minutes": a.minutes, "fps_per_camera": a.fps, "samples": len(samples),
        "exit_status": rc, "crashed_before_the_end": crashed,
        "rss_mb_first_sample": samples[0]["rss_mb"] if samples else None,
        "rss_mb_second_half_start": first, "rss_mb_end": last, "rss_growth_second_half": growth,
        "rss_slope_mb_per_min_second_half": slope_per_min(half),
        "frames_read": sum(s.get("frames_read", 0) for s in streams),
        "frames_encoded": sum(s.get("frames_encoded", 0) for s in streams),
        "frames_dropped": sum(s["dropped"]["oldest"] + s["dropped"]["newest"] for s in streams) if streams else 0,
        "frames_failed": sum(s.get("frames_failed", 0) for s in streams),
        "answers": summary.get("answers", {}).get("answered") if isinstance(summary.get("answers"), dict) else None,
        "accounted": bool(summary.get("accounted")),
    }
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump(verdict, f, indent=2)
    print(json.dumps(verdict, indent=2))
    ok = verdict["accounted"] and rc == 0 and not crashed and growth <= a.max_growth
    print("soak:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
