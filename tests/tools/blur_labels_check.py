"""The training script's motion labels against scenes vlcache renders: the
patches marked "moving" are those a moving shape's exposure smeared, near
its path; still frames mark none; a mirrored frame's labels are the
mirror of its labels; and a scene folder rendered before the truth carried
each object's motion is rendered again rather than read with no motion.
  blur_labels_check.py VLCACHE SOURCE_DIR WORK_DIR"""
import json
import math
import os
import shutil
import sys

import numpy as np

vlcache, src, work = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "tools"))
import train_tiny_llava as T  # noqa: E402

T.motion_label = "blur"

shutil.rmtree(work, ignore_errors=True)
scene = os.path.join(work, "seed14")
T.render(vlcache, 14, 0, scene, 40)
_, frames = T.load_scene(scene)
side, p = T.VISION["image_size"] // T.VISION["patch_size"], T.VISION["patch_size"]
moving_frames = 0
for f in frames:
    labels = T.patch_labels(f["objects"])[2].reshape(side, side)
    movers = [o for o in f["objects"] if o["moving"]]
    assert all(("dx" in o) for o in f["objects"]), f"frame {f['frame']}: an object without dx"
    if not movers:
        assert labels.sum() == 0, f"frame {f['frame']}: no shape moves, yet {labels.sum()} patches are labelled moving"
        continue
    moving_frames += 1
    assert labels.sum() > 0, f"frame {f['frame']}: a shape moves {[(o['dx'], o['dy']) for o in movers]}, no patch is labelled"
    for r, c in zip(*np.nonzero(labels)):
        cx, cy = (c + 0.5) * p, (r + 0.5) * p
        near = False
        for o in movers:  # within reach of the segment the shape's centre swept
            ax, ay, bx, by = o["x"] - o["dx"], o["y"] - o["dy"], o["x"], o["y"]
            t = max(0.0, min(1.0, ((cx - ax) * (bx - ax) + (cy - ay) * (by - ay)) / max(1e-9, (bx - ax) ** 2 + (by - ay) ** 2)))
            near |= math.hypot(cx - ax - t * (bx - ax), cy - ay - t * (by - ay)) <= 1.25 * o["radius"] + p * 0.75
        assert near, f"frame {f['frame']}: patch ({r}, {c}) labelled moving, far from every moving shape"
    mirrored = T.patch_labels(f["objects"], mirrored=True)[2].reshape(side, side)
    assert (mirrored == labels[:, ::-1]).all(), f"frame {f['frame']}: mirrored labels are not the mirror"
    still = [dict(o, dx=0.0, dy=0.0) for o in f["objects"]]
    assert T.patch_labels(still)[2].sum() == 0, f"frame {f['frame']}: the same shapes held still are labelled moving"
assert moving_frames >= 5, f"seed 14's first 40 frames should move a shape in several frames, not {moving_frames}"

# A folder written before the truth carried dx is rendered again.
truth = os.path.join(scene, "truth.jsonl")
with open(truth) as f:
    lines = [json.loads(line) for line in f]
with open(truth, "w") as f:
    for line in lines:
        for o in line["objects"]:
            o.pop("dx"), o.pop("dy")
        f.write(json.dumps(line) + "\n")
T.render(vlcache, 14, 0, scene, 40)
with open(truth) as f:
    assert '"dx"' in f.read(), "a scene rendered before dx was read as it was"
print(f"blur labels: {len(frames)} frames, {moving_frames} with motion, every check held")
