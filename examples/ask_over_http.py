#!/usr/bin/env python3
"""Ask a running pipeline a question over its OpenAI-style API, with nothing
but Python's standard library (no SDK needed; the official `openai` package
works the same way with base_url=".../v1").

The pipeline serves the API where it serves its live view ([view] http, or
`vlcache run --http HOST:PORT`):

    python3 examples/ask_over_http.py http://127.0.0.1:8080 --camera gate \\
        --question "How many red shapes are there?" [--stream] [--token-file F]
    python3 examples/ask_over_http.py http://127.0.0.1:8080 --image frame.png \\
        --question "How many red shapes are there?"

A camera is answered from its latest frame's cached tokens and K/V; an image
file is sent as a data URL and encoded in full. Prints the answer, then the
frame it is about and the tokens it cost.
"""
import argparse
import base64
import json
import sys
import urllib.error
import urllib.request


def post(url, token, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", "Bearer " + token)
    return urllib.request.urlopen(request, timeout=120)


def image_url(args):
    if args.camera:
        return "camera://" + args.camera
    kind = "png" if args.image.lower().endswith(".png") else "jpeg"
    with open(args.image, "rb") as f:
        return "data:image/%s;base64,%s" % (kind, base64.b64encode(f.read()).decode())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the pipeline's web address, e.g. http://127.0.0.1:8080")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--camera", help="a camera of the pipeline")
    where.add_argument("--image", help="a JPEG or PNG file")
    parser.add_argument("--question", required=True)
    parser.add_argument("--stream", action="store_true", help="print the answer as it is generated")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--token-file", help="the view's bearer token ([view] token_file)")
    args = parser.parse_args()
    token = open(args.token_file).readline().strip() if args.token_file else ""
    body = {
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": args.question},
            {"type": "image_url", "image_url": {"url": image_url(args)}}]}],
        "max_tokens": args.max_tokens,
        "stream": args.stream,
    }
    if args.stream:
        body["stream_options"] = {"include_usage": True}
    try:
        response = post(args.base.rstrip("/") + "/v1/chat/completions", token, body)
    except urllib.error.HTTPError as e:
        error = json.loads(e.read())["error"]
        sys.exit("error %d (%s): %s" % (e.code, error["code"] or error["type"], error["message"]))
    if args.stream:
        usage, about = None, None
        for line in response:  # server-sent events: "data: {...}" lines, "data: [DONE]" last
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk["choices"]:
                print(choice["delta"].get("content", ""), end="", flush=True)
            usage, about = chunk.get("usage", usage), chunk.get("vlcache", about)
        print()
    else:
        reply = json.load(response)
        print(reply["choices"][0]["message"]["content"])
        usage, about = reply["usage"], reply["vlcache"]
    if about and about["camera"]:
        print("about %s frame %d" % (about["camera"], about["frame_seq"]))
    if usage:
        print("tokens: prompt %d (%d cached), answer %d" % (
            usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"], usage["completion_tokens"]))


if __name__ == "__main__":
    main()
