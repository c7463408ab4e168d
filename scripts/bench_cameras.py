#!/usr/bin/env python3
"""Many cameras under a token-store budget (a benchmark, not part of CI).

N looping cameras of the sample video, paced like live ones, through the
ViT-B/16-shaped encoder (random weights, f16 or i8 stores, no layer-wise
state, no language model) for a fixed time at each capacity and eviction policy;
then SIGINT, and the run's summary must account for every frame. Resident
memory is sampled twice a second.

    /usr/bin/python3 scripts/bench_cameras.py --cameras 64 --fps 1 \\
        --capacities 128,256,512,0 --policies value,lru --seconds 90 [--store-dtype i8]

Capacity 0 is unbounded; it gives each camera's share of tokens computed
with a state always at hand, from which the ideal at each capacity follows:
the cameras that save the most hold the states that fit, the others run in
full. Writes OUT/runs.jsonl (one run a line), OUT/table.md and OUT/plot.svg
(tokens computed against capacity per policy, and the ideal). Exits 1 when
a run lost a frame or failed.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

from soak import rss_mb  # this folder's soak benchmark: resident memory from /proc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIDEO = "/usr/share/doc/opencv-doc/examples/data/vtest.avi"


def pipeline_toml(cameras, fps, capacity_mb, policy, store_dtype):
    index = "" if capacity_mb == 0 else f'\n[index]\ncapacity_mb = {capacity_mb}\neviction = "{policy}"\n'
    head = f"""# Written by scripts/bench_cameras.py.
[pipeline]
name = "cameras"
max_in_flight = 2
queue = 2
drop_policy = "drop_oldest"
hashers = 2
shards = 2
progress_seconds = 0

[input]
image_size = 224
patch_size = 16

[gate]
mad = 3.0

[drift]
max_token_age = 50

[encoder]
model = "vit-b16"
store_dtype = "{store_dtype}"
layer_tolerance = 0.0
batch_tokens = 256
batch_timeout_ms = 30
{index}"""
    cams = "".join(f"""
[[camera]]
name = "cam{i}"
source = "{VIDEO}"
start_frame = {(97 * i) % 700}
loop = true
pace_fps = {fps}
""" for i in range(cameras))
    return head + cams


def run_one(vlcache, out, cameras, fps, capacity_mb, policy, seconds, store_dtype):
    tag = f"c{cameras}_f{fps:g}_{store_dtype}_m{capacity_mb:g}_{policy if capacity_mb else 'unbounded'}"
    cfg, summary = os.path.join(out, tag + ".toml"), os.path.join(out, tag + ".summary.json")
    with open(cfg, "w") as f:
        f.write(pipeline_toml(cameras, fps, capacity_mb, policy, store_dtype))
    log = open(os.path.join(out, tag + ".log"), "w")
    started = time.time()
    proc = subprocess.Popen([vlcache, "run", cfg, "--summary-json", summary], stdout=log, stderr=subprocess.STDOUT)
    samples = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                samples.append((time.time() - started, rss_mb(proc.pid)))
            except (OSError, RuntimeError):  # the process is gone
                break
            done.wait(0.5)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
    done.set()
    sampler.join()
    if not os.path.exists(summary):
        sys.exit(f"{tag}: no summary (exit {proc.returncode}); see {log.name}")
    s = json.load(open(summary))
    streams = s["streams"]
    read = sum(x["frames_read"] for x in streams)
    dropped = sum(x["dropped"]["oldest"] + x["dropped"]["newest"] for x in streams)
    second_half = [m for t, m in samples if t > seconds / 2] or [0.0]
    return {
        "tag": tag, "cameras": cameras, "fps": fps, "capacity_mb": capacity_mb,
        "policy": policy if capacity_mb else "unbounded", "seconds": s.get("seconds", seconds),
        "exit": proc.returncode, "accounted": s["accounted"],
        "tokens_computed_share": s["tokens_computed_share"], "hit_rate": s["hit_rate"],
        "frames_read": read, "frames_encoded": s["frames_encoded"], "dropped": dropped,
        "dropped_share": dropped / read if read else 0.0,
        "throughput_fps": s["throughput_fps"],
        "evictions": s.get("token_store", {}).get("evictions", 0),
        "refills": s.get("token_store", {}).get("refills", 0),
        "store_dtype": store_dtype,
        "state_mib": s.get("token_store", {}).get("state_bytes", 0) / 2**20,
        "store_peak_mb": s.get("token_store", {}).get("peak_bytes", 0) / 2**20,
        "rss_peak_mb": max(m for _, m in samples) if samples else 0.0,
        "rss_second_half_mb": sum(second_half) / len(second_half),
        "hash_p50_ms": s["latency"].get("hash", {}).get("p50_ms"),
        "encode_p50_ms": s["latency"].get("encode", {}).get("p50_ms"),
        "total_p50_ms": s["latency"].get("end_to_end", {}).get("p50_ms"),
        "per_camera_share": {x["name"]: x["tokens_computed_share"] for x in streams},
        "per_camera_hit_rate": {x["name"]: x["hit_rate"] for x in streams},
    }


def ideal_share(unbounded, capacity_mb, state_mib):
    """Tokens computed if the cameras saving the most held the states that fit."""
    shares = sorted(unbounded["per_camera_share"].values())  # smallest share computed = saves the most
    fit = min(len(shares), int(capacity_mb // state_mib))
    return (sum(shares[:fit]) + (len(shares) - fit)) / len(shares)


def svg_plot(path, runs, ideal, title):
    w, h, left, bottom, top, right = 640, 400, 70, 50, 40, 150
    caps = sorted({r["capacity_mb"] for r in runs if r["capacity_mb"] > 0})
    if not caps:
        return
    xmax = max(caps)
    x = lambda c: left + (w - left - right) * c / xmax
    y = lambda v: h - bottom - (h - bottom - top) * v
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{left}" y="20" font-size="14">{title}</text>',
             f'<line x1="{left}" y1="{y(0)}" x2="{w - right}" y2="{y(0)}" stroke="black"/>',
             f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(1)}" stroke="black"/>']
    for v in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{left - 8}" y="{y(v) + 4}" text-anchor="end">{v:.0%}</text>')
    for c in caps:
        parts.append(f'<text x="{x(c)}" y="{y(0) + 16}" text-anchor="middle">{c:g}</text>')
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">capacity (MiB)</text>')
    series = {"ideal": [(c, ideal[c]) for c in caps if c in ideal]} if ideal else {}
    for r in runs:
        if r["capacity_mb"] > 0:
            series.setdefault(r["policy"], []).append((r["capacity_mb"], r["tokens_computed_share"]))
    colors = {"value": "#1f77b4", "lru": "#d62728", "lfu": "#2ca02c", "decayed_frequency": "#9467bd", "ideal": "#888"}
    for i, (name, pts) in enumerate(series.items()):
        pts.sort()
        color = colors.get(name, "#000")
        dash = ' stroke-dasharray="5,4"' if name == "ideal" else ""
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="' +
                     " ".join(f"{x(c):.1f},{y(v):.1f}" for c, v in pts) + '"/>')
        parts.append(f'<text x="{w - right + 10}" y="{top + 20 * i + 10}" fill="{color}">{name}</text>')
    parts.append(f'<text x="{left + 4}" y="{top - 6}">tokens computed</text></svg>')
    open(path, "w").write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cameras", type=int, default=64)
    ap.add_argument("--fps", type=float, default=1.0, help="frames per second each camera delivers")
    ap.add_argument("--capacities", default="128,256,512,0", help="MiB, comma-separated; 0 = unbounded")
    ap.add_argument("--policies", default="value,lru")
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--store-dtype", default="f16", choices=["f32", "f16", "i8"], help="[encoder] store_dtype")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-cameras"))
    ap.add_argument("--vlcache", default=os.path.join(REPO, "build", "vlcache"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    caps = [float(c) for c in a.capacities.split(",")]
    runs = []
    with open(os.path.join(a.out, "runs.jsonl"), "a") as log:
        for cap in sorted(caps, key=lambda c: c == 0, reverse=True):  # unbounded first: it gives the ideal
            for policy in (a.policies.split(",") if cap else ["unbounded"]):
                r = run_one(a.vlcache, a.out, a.cameras, a.fps, cap, policy, a.seconds, a.store_dtype)
                runs.append(r)
                log.write(json.dumps(r) + "\n")
                log.flush()
                print(f"{r['tag']}: tokens computed {r['tokens_computed_share']:.1%}, {r['throughput_fps']:.1f} frames/s, "
                      f"dropped {r['dropped_share']:.1%}, evictions {r['evictions']}, RSS peak {r['rss_peak_mb']:.0f} MB, "
                      f"hash p50 {r['hash_p50_ms'] or 0:.1f} ms, accounted {r['accounted']}", flush=True)
    unbounded = next((r for r in runs if r["capacity_mb"] == 0), None)
    state_mib = max((r["state_mib"] for r in runs), default=0)
    ideal = {r["capacity_mb"]: ideal_share(unbounded, r["capacity_mb"], state_mib)
             for r in runs if unbounded and r["capacity_mb"] and state_mib}
    rows = ["| capacity | policy | tokens computed | ideal | frames/s | dropped | evictions | refills | store peak | RSS peak | hash p50 | frame p50 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["capacity_mb"] == 0, r["capacity_mb"], r["policy"])):
        cap = "unbounded" if r["capacity_mb"] == 0 else f"{r['capacity_mb']:g} MiB"
        ideal_cell = f"{ideal[r['capacity_mb']]:.1%}" if r["capacity_mb"] in ideal else "-"
        rows.append(f"| {cap} | {r['policy']} | {r['tokens_computed_share']:.1%} | {ideal_cell} | {r['throughput_fps']:.1f} | "
                    f"{r['dropped_share']:.1%} | {r['evictions']} | {r['refills']} | {r['store_peak_mb']:.0f} MB | "
                    f"{r['rss_peak_mb']:.0f} MB | {r['hash_p50_ms'] or 0:.1f} ms | {r['total_p50_ms'] or 0:.0f} ms |")
    table = "\n".join(rows)
    open(os.path.join(a.out, "table.md"), "w").write(table + "\n")
    print(table)
    svg_plot(os.path.join(a.out, "plot.svg"), runs, ideal,
             f"{a.cameras} cameras at {a.fps:g} frame/s, {a.store_dtype} stores ({state_mib:.2f} MiB a state)")
    bad = [r["tag"] for r in runs if not r["accounted"] or r["exit"] != 0]
    if bad:
        sys.exit("frames unaccounted or failed runs: " + ", ".join(bad))


if __name__ == "__main__":
    main()
