#!/usr/bin/env python3
"""`vlcache ask` with no --model answers with the shipped scene model: every
question of a rendered frame gets an answer of the right form, most of them
right (the model is small: 85-95 % on held-out scenes)."""
import json
import subprocess
import sys

vlcache, scene = sys.argv[1], sys.argv[2]
truth = json.loads(open(f"{scene}/truth.jsonl").readline())
image = f"{scene}/frames/{truth['frame']:06d}.png"
right = 0
for q in truth["questions"]:
    p = subprocess.run([vlcache, "ask", "--image", image, "--question", q["question"], "--max-new-tokens", "4"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: exit {p.returncode} for {q['question']!r}: {p.stderr.strip()}")
    answer = p.stdout.splitlines()[0].strip()
    if "random weights" in p.stdout + p.stderr:
        sys.exit("FAIL: the default model has random weights")
    print(f"{q['question']} -> {answer} (truth {q['answer']})")
    right += answer == q["answer"]
n = len(truth["questions"])
print(f"{right}/{n} right")
if n == 0 or right * 2 < n:
    sys.exit("FAIL: fewer than half right")
