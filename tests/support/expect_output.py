#!/usr/bin/env python3
"""Runs a command test the way a person reads its result: the exit status,
the output, and figures in a JSON file the command wrote, all checked.

    expect_output.py [--exit N|nonzero] [--expect REGEX]... [--json FILE
                     --require 'key.path OP NUMBER|key.path']... -- COMMAND ARGS...

CTest's PASS_REGULAR_EXPRESSION ignores the exit status; this does not.
REGEX is a Python regular expression searched over stdout+stderr with
DOTALL. OP is one of < <= > >= ==. Prints the command's output, then one
line per check, and exits 1 on the first failed check.
"""
import argparse
import json
import operator
import re
import subprocess
import sys

OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt, ">": operator.gt}


def lookup(doc, path):
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def main():
    if "--" not in sys.argv:
        sys.exit("expect_output.py: usage: [options] -- COMMAND ARGS...")
    split = sys.argv.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("--exit", default="0")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--json")
    p.add_argument("--require", action="append", default=[])
    o = p.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    if not command:
        sys.exit("expect_output.py: no command given")

    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out = proc.stdout.decode("utf-8", "replace")
    sys.stdout.write(out)
    if not out.endswith("\n"):
        sys.stdout.write("\n")

    failures = []
    rc = proc.returncode
    if o.exit == "nonzero":
        if rc == 0:
            failures.append("exit status 0, a failure was expected")
    elif rc != int(o.exit):
        failures.append(f"exit status {rc}, expected {o.exit}")
    for pattern in o.expect:
        if not re.search(pattern, out, re.DOTALL):
            failures.append(f"output does not match /{pattern}/")
    if o.require:
        if not o.json:
            sys.exit("expect_output.py: --require needs --json FILE")
        try:
            with open(o.json) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            failures.append(f"cannot read {o.json}: {e}")
            doc = None
        for req in o.require:
            m = re.fullmatch(r"\s*([\w.]+)\s*(<=|>=|==|<|>)\s*(\S+)\s*", req)
            if not m:
                sys.exit(f"expect_output.py: cannot parse requirement '{req}'")
            if doc is None:
                continue
            key, op, bound_text = m.group(1), m.group(2), m.group(3)
            try:
                # The bound is a number or another key of the same document.
                bound = float(bound_text) if re.fullmatch(r"[-+0-9.eE]+", bound_text) else float(lookup(doc, bound_text))
                value = float(lookup(doc, key))
            except (KeyError, IndexError, TypeError, ValueError):
                failures.append(f"{o.json}: no number at '{key}'")
                continue
            verdict = "ok" if OPS[op](value, bound) else "FAILED"
            print(f"check: {key} = {value:.6g} {op} {bound_text} ({bound:g}): {verdict}")
            if verdict != "ok":
                failures.append(f"{key} = {value:.6g}, required {op} {bound:g}")
    for f in failures:
        print("check failed:", f)
    if failures:
        sys.exit(1)
    print(f"checks passed (exit status {rc})")


if __name__ == "__main__":
    main()
