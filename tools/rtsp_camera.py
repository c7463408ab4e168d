#!/usr/bin/env python3
"""An IP camera on loopback for tests and demos: an RTSP server (GStreamer's
gst-rtsp-server) serving H.264 over RTP, from an H.264 MP4 file (paced at its
frame rate, as a camera would) or from a live test pattern.

    tools/rtsp_camera.py --port 8554 --path /cam --video clip.mp4
    tools/rtsp_camera.py --port 8554 --path /cam --pattern

Prints "serving rtsp://127.0.0.1:PORT/PATH" once it listens; SIGTERM or
SIGINT stop it. Debian: gir1.2-gst-rtsp-server-1.0, python3-gi,
gstreamer1.0-plugins-good (and -ugly for --pattern's x264enc).
"""
import argparse
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8554)
    ap.add_argument("--path", default="/cam")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--video", help="an MP4 file holding H.264 (served as is, no re-encoding)")
    src.add_argument("--pattern", action="store_true", help="a live moving test pattern, encoded with x264")
    args = ap.parse_args()

    Gst.init(None)
    if args.video:
        launch = (f'( filesrc location="{args.video}" ! qtdemux ! queue ! '
                  "rtph264pay name=pay0 pt=96 config-interval=1 )")
    else:
        launch = ("( videotestsrc is-live=true pattern=ball ! "
                  "video/x-raw,width=320,height=240,framerate=10/1 ! "
                  "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=10 ! "
                  "rtph264pay name=pay0 pt=96 config-interval=1 )")
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(launch)
    factory.set_shared(True)  # every client sees the same live stream
    server.get_mount_points().add_factory(args.path, factory)
    if server.attach(None) == 0:
        print(f"cannot listen on 127.0.0.1:{args.port}", file=sys.stderr)
        return 1
    loop = GLib.MainLoop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    print(f"serving rtsp://127.0.0.1:{args.port}{args.path}", flush=True)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
