#!/usr/bin/python3
"""Publish a GStreamer test pattern (VP8) and tone (Opus) to a WHIP endpoint.

webrtcbin (Debian's gstreamer1.0-plugins-bad) makes the offer; this script
POSTs it once ICE gathering is complete (no trickle), applies the answer, and
DELETEs the resource on SIGTERM or SIGINT. It prints "resource <url>" once
the server accepted the offer.

usage: gstwhip.py http://host:port/whip/<room>?name=X [token]
"""
import os
import signal
import sys
import urllib.error
import urllib.parse
import urllib.request

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC  # noqa: E402

endpoint = sys.argv[1]
token = sys.argv[2] if len(sys.argv) > 2 else ""
pattern = os.environ.get("PATTERN", "smpte")

Gst.init(None)
pipe = Gst.parse_launch(
    "webrtcbin name=w bundle-policy=max-bundle "
    f"videotestsrc is-live=true pattern={pattern} ! video/x-raw,width=640,height=360,framerate=30/1 ! "
    "videoconvert ! vp8enc deadline=1 keyframe-max-dist=60 target-bitrate=800000 ! "
    "rtpvp8pay picture-id-mode=15-bit ! application/x-rtp,media=video,encoding-name=VP8,payload=96 ! w. "
    "audiotestsrc is-live=true wave=sine volume=0.3 ! audioconvert ! audioresample ! opusenc ! "
    "rtpopuspay ! application/x-rtp,media=audio,encoding-name=OPUS,payload=111 ! w."
)
w = pipe.get_by_name("w")
loop = GLib.MainLoop()
resource = None
offering = False


def headers():
    h = {"Content-Type": "application/sdp"}
    if token:
        h["Authorization"] = "Bearer " + token
    return h


def on_negotiation_needed(el):
    # Fired once per linked pad: offer once, after both are in.
    global offering
    if not offering:
        offering = True
        GLib.timeout_add(300, offer, el)


def offer(el):
    i = 0
    while True:
        t = el.emit("get-transceiver", i)
        if t is None:
            break
        t.set_property("direction", GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY)
        i += 1
    el.emit("create-offer", None, Gst.Promise.new_with_change_func(on_offer, el, None))
    return False


def on_offer(promise, el, _):
    promise.wait()
    reply = promise.get_reply()
    offer = reply.get_value("offer")
    if offer is None:
        print("create-offer:", reply.to_string(), file=sys.stderr, flush=True)
        loop.quit()
        return
    el.emit("set-local-description", offer, Gst.Promise.new())


def on_gathering(el, _pspec):
    if el.get_property("ice-gathering-state") == GstWebRTC.WebRTCICEGatheringState.COMPLETE:
        GLib.idle_add(post)


def post():
    global resource
    sdp = w.get_property("local-description").sdp.as_text()
    if os.environ.get("WHIP_DEBUG"):
        print(sdp, file=sys.stderr, flush=True)
    req = urllib.request.Request(endpoint, data=sdp.encode(), method="POST", headers=headers())
    try:
        resp = urllib.request.urlopen(req, timeout=10)
    except urllib.error.HTTPError as e:
        print("WHIP refused:", e.code, e.read().decode().strip(), file=sys.stderr, flush=True)
        loop.quit()
        return False
    except urllib.error.URLError as e:
        print("WHIP:", e.reason, file=sys.stderr, flush=True)
        loop.quit()
        return False
    resource = urllib.parse.urljoin(endpoint, resp.headers["Location"])
    text = resp.read().decode()
    if os.environ.get("WHIP_DEBUG"):
        print(text, file=sys.stderr, flush=True)
    _, msg = GstSdp.SDPMessage.new_from_text(text)
    answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, msg)
    w.emit("set-remote-description", answer, Gst.Promise.new())
    print("resource", resource, flush=True)
    return False


def stop():
    if resource:
        try:
            urllib.request.urlopen(urllib.request.Request(resource, method="DELETE", headers=headers()), timeout=5)
        except urllib.error.URLError:
            pass
    loop.quit()
    return False


w.connect("on-negotiation-needed", on_negotiation_needed)
w.connect("notify::ice-gathering-state", on_gathering)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, stop)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, stop)
pipe.set_state(Gst.State.PLAYING)
loop.run()
pipe.set_state(Gst.State.NULL)
sys.exit(0 if resource else 1)
