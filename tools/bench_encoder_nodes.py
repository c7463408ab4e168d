#!/usr/bin/python3
"""Encoder nodes as separate processes on this machine: throughput with 1, 2
and 3 nodes, and the time a killed node costs.

Throughput: N unpaced cameras (segments of one video) through one pipeline
whose encoder runs on K nodes (`vlcache node`, each with --threads T, as if
each were a machine of T cores); per run the pipeline's frames per second,
and per node its frames and busy time (its batches' time, reply included).
On one machine the nodes and the pipeline share the cores, so the measured
scaling is capped by them; the projection for separate machines is K times
the one node's rate (frames over busy time), as long as the pipeline's own
stages (decode, hash, gate) keep up.

Recovery: two nodes, four paced cameras; one node is killed (SIGKILL). The
stall is the longest time any camera went without an encoded frame after
the kill (its streams move to the other node). Then a new node comes up on
the killed one's port: the time from its "listening" to the pipeline's
reconnection (attempts back off from 1 s to 8 s). The same with one node
and `fallback = "local"`: the stall until frames flow through this process.

Prints a JSON object; the figures in docs/benchmark-history.md come from it.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(vlcache, port, model, threads, log):
    out = open(log, "w")
    p = subprocess.Popen([vlcache, "node", "--role", "encoder", "--listen", str(port), "--model", model,
                          "--threads", str(threads)], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if "listening" in open(log).read():
            return p
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit(f"the node on port {port} never listened: {open(log).read()}")


def pipeline_toml(ports, cameras, frames, video, image_size, patch_size, model, pace_fps, fallback, sink):
    lines = ['[pipeline]', 'name = "nodes-bench"', 'max_in_flight = 2', 'drop_policy = "block"',
             'progress_seconds = 0', '[input]', f'image_size = {image_size}', f'patch_size = {patch_size}',
             '[encoder]', f'model = "{model}"',
             'remote = [' + ", ".join(f'"127.0.0.1:{p}"' for p in ports) + ']', 'remote_timeout_s = 30']
    if fallback:
        lines.append('fallback = "local"')
    for i in range(cameras):
        lines += ['[[camera]]', f'name = "cam{i}"', f'source = "{video}"', f'start_frame = {i * 120}',
                  f'max_frames = {frames}']
        if pace_fps:
            lines.append(f'pace_fps = {pace_fps}')
    lines += ['[[sink]]', 'kind = "jsonl"', f'path = "{sink}"']
    return "\n".join(lines) + "\n"


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def throughput(a, k, work):
    ports = [free_port() for _ in range(k)]
    nodes = [start_node(a.vlcache, p, a.model, a.node_threads, f"{work}/node{k}_{i}.txt") for i, p in enumerate(ports)]
    cfg = f"{work}/tput{k}.toml"
    open(cfg, "w").write(pipeline_toml(ports, a.cameras, a.frames, a.video, a.image_size, a.patch_size, a.model, 0,
                                       False, f"{work}/tput{k}.jsonl"))
    started = time.monotonic()
    run = subprocess.run([a.vlcache, "run", cfg, "--summary-json", f"{work}/tput{k}.json"], capture_output=True,
                         text=True, timeout=1800)
    wall = time.monotonic() - started
    stop(nodes)
    if run.returncode != 0:
        sys.exit(f"the run with {k} node(s) failed ({run.returncode}): {run.stdout[-2000:]}{run.stderr[-2000:]}")
    s = json.load(open(f"{work}/tput{k}.json"))
    per_node = [{"frames": n["frames"], "busy_seconds": round(n["busy_seconds"], 2),
                 "fps_while_busy": round(n["frames"] / n["busy_seconds"], 2) if n["busy_seconds"] > 0 else 0}
                for n in s["encoder"]["nodes"]]
    return {"nodes": k, "frames": s["frames_encoded"], "wall_seconds": round(wall, 2),
            "throughput_fps": round(s["throughput_fps"], 2), "share_recomputed": round(s["tokens_computed_share"], 4),
            "decode_preprocess_fps": round(s["stage_throughput_fps"]["decode_preprocess"], 2),
            "failed": sum(st["frames_failed"] for st in s["streams"]), "accounted": s["accounted"],
            "per_node": per_node}


def line_times(sink, seen, times):
    """Stamps with the time of this poll each camera's lines new since the last."""
    if not os.path.exists(sink):
        return
    with open(sink) as f:
        lines = f.readlines()
    now = time.monotonic()
    for line in lines[seen[0]:]:
        if not line.endswith("\n"):
            break
        seen[0] += 1
        stream = json.loads(line)["stream"]
        times.setdefault(stream, []).append(now)


def recovery(a, work, fallback):
    k = 1 if fallback else 2
    ports = [free_port() for _ in range(k)]
    tag = "fallback" if fallback else "kill"
    nodes = [start_node(a.vlcache, p, a.model, a.node_threads, f"{work}/{tag}node{i}.txt") for i, p in enumerate(ports)]
    sink = f"{work}/{tag}.jsonl"
    cfg = f"{work}/{tag}.toml"
    cameras = 4
    open(cfg, "w").write(pipeline_toml(ports, cameras, 100000, a.video, a.image_size, a.patch_size, a.model,
                                       a.pace_fps, fallback, sink))
    log = open(f"{work}/{tag}_run.txt", "w")
    run = subprocess.Popen([a.vlcache, "run", cfg, "--summary-json", f"{work}/{tag}.json"], stdout=log,
                           stderr=subprocess.STDOUT)
    seen, times = [0], {}

    def poll_until(cond, limit, what):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            line_times(sink, seen, times)
            if cond():
                return
            time.sleep(0.01)
        if what is None:
            return
        stop([run] + nodes)
        sys.exit(f"{tag}: {what} did not happen within {limit} s: {open(f'{work}/{tag}_run.txt').read()[-3000:]}")

    def watch(seconds):  # frames are stamped when seen: keep looking
        poll_until(lambda: False, seconds, None)

    # Warm: every camera has had a few frames encoded on the nodes.
    poll_until(lambda: len(times) == cameras and all(len(t) >= 20 for t in times.values()), 300, "warm-up")
    watch(2)
    nodes[0].send_signal(signal.SIGKILL)
    killed = time.monotonic()
    nodes[0].wait()
    poll_until(lambda: all(t[-1] > killed for t in times.values()), 60, "frames after the kill")
    watch(3)
    # The stall: the longest gap between frames of any camera around the kill.
    gaps = {}
    for cam, t in times.items():
        around = [x for x in t if killed - 5 <= x <= killed + 60]
        gaps[cam] = max((b - x for x, b in zip(around, around[1:])), default=0)
    result = {"stall_seconds_max": round(max(gaps.values()), 2),
              "normal_frame_interval_s": round(1 / a.pace_fps, 3)}
    # A new node on the killed one's port.
    text = lambda: open(f"{work}/{tag}_run.txt").read()
    before = text().count("to the node at 127.0.0.1:%d" % ports[0])
    back = start_node(a.vlcache, ports[0], a.model, a.node_threads, f"{work}/{tag}back.txt")
    listening = time.monotonic()
    poll_until(lambda: text().count("to the node at 127.0.0.1:%d" % ports[0]) > before, 60, "the reconnection")
    result["reconnect_seconds_after_listening"] = round(time.monotonic() - listening, 2)
    watch(2)
    run.send_signal(signal.SIGINT)
    run.wait(timeout=60)
    stop(nodes[1:] + [back])
    s = json.load(open(f"{work}/{tag}.json"))
    result["failed"] = sum(st["frames_failed"] for st in s["streams"])
    result["encoded"] = s["frames_encoded"]
    result["accounted"] = s["accounted"]
    result["per_node_frames"] = {n["address"].replace(str(ports[0]), "killed"): n["frames"]
                                 for n in s["encoder"]["nodes"]}
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vlcache", required=True)
    p.add_argument("--video", default="/usr/share/doc/opencv-doc/examples/data/vtest.avi")
    p.add_argument("--model", default="vit-b16")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--patch-size", type=int, default=16)
    p.add_argument("--cameras", type=int, default=6)
    p.add_argument("--frames", type=int, default=40, help="frames per camera in the throughput runs")
    p.add_argument("--node-threads", type=int, default=1)
    p.add_argument("--pace-fps", type=float, default=10, help="the cameras' pace in the recovery runs")
    p.add_argument("--max-nodes", type=int, default=3)
    a = p.parse_args()
    out = {"model": a.model, "cameras": a.cameras, "frames_per_camera": a.frames, "node_threads": a.node_threads,
           "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as work:
        runs = [throughput(a, k, work) for k in range(1, a.max_nodes + 1)]
        one = runs[0]["per_node"][0]["fps_while_busy"]
        for r in runs:
            r["speedup_vs_1_node"] = round(r["throughput_fps"] / runs[0]["throughput_fps"], 2)
            r["projected_encoder_fps_separate_machines"] = round(r["nodes"] * one, 2)
        out["throughput"] = runs
        out["recovery_two_nodes"] = recovery(a, work, fallback=False)
        out["recovery_local_fallback"] = recovery(a, work, fallback=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
