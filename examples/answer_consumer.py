#!/usr/bin/env python3
"""Consume a pipeline's results over ZeroMQ from Python (Debian: python3-zmq).

The pipeline's [[sink]] kind = "zmq" publishes two-part messages:
[stream name][one JSON object per frame]. Subscribe to one stream by giving
its name, or to all of them.

    python3 examples/answer_consumer.py tcp://127.0.0.1:5556 [STREAM] [COUNT]
"""
import json
import sys

import zmq


def main():
    endpoint = sys.argv[1]
    stream = sys.argv[2] if len(sys.argv) > 2 else ""
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt_string(zmq.SUBSCRIBE, stream)
    sub.connect(endpoint)
    seen = 0
    while count == 0 or seen < count:
        topic, payload = sub.recv_multipart()
        frame = json.loads(payload)
        print(f"{topic.decode():10s} frame {frame['seq']:5d}: {frame['tokens_computed']:3d} of "
              f"{frame['tokens']} tokens recomputed, {frame['latency_ms']['total']:.1f} ms end to end")
        seen += 1


if __name__ == "__main__":
    main()
