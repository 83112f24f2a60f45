#!/usr/bin/env bash
# Regenerates the pre-encoded media the load generator sends (internal/clip/data):
#
#   vp8-180p30.ivf  320x180  30 fps  150 kb/s  simulcast encoding q
#   vp8-360p30.ivf  640x360  30 fps  500 kb/s  simulcast encoding h (and single-layer video)
#   vp8-720p30.ivf  1280x720 30 fps 2500 kb/s  simulcast encoding f
#   vp8-180p15.ivf  320x180  15 fps  100 kb/s  the Last N bench's low-rate single layer
#   speech.ogg      Opus 32 kb/s VBR, 20 ms frames, synthetic speech (flite)
#   noise.ogg       Opus 32 kb/s VBR, 20 ms frames, quiet room noise
#   speech.levels   one RFC 6464 level (−dBov, 0..127) per 20 ms frame of speech.ogg
#   noise.levels    the same for noise.ogg
#
# Video: ffmpeg's testsrc2 (moving patterns) through libvpx in real-time mode, the
# rates of Jitsi Meet's simulcast (thesis ch. 5), a keyframe every 40 frames
# (1.33 s, the Last N paper's load endpoint), and three temporal layers in the
# 0-2-1-2 pattern (libvpx ts_layering_mode 3, as webrtc.org's VP8 encoder), so frame
# i of a clip is in temporal layer [0,2,1,2][i mod 4]. Every clip lasts 4 s and loops.
#
# Needs ffmpeg with libvpx, libopus and libflite (Debian's ffmpeg package). The
# outputs are committed; run this only to change them.
set -euo pipefail
out="$(cd "$(dirname "$0")/../.." && pwd)/internal/clip/data"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -hide_banner -loglevel error -y -nostdin "$@"; }

# vp8 NAME WIDTH HEIGHT FPS KBPS GOP
vp8() {
  local name=$1 w=$2 h=$3 fps=$4 kbps=$5 gop=$6
  # One GOP more than needed, then cut at the second keyframe: libvpx's first
  # keyframe comes out small, later ones are the realistic 4-6 times a delta frame.
  ff -f lavfi -i "testsrc2=size=${w}x${h}:rate=${fps}" -frames:v "$((fps * 4 + gop))" \
    -c:v libvpx -threads 1 -deadline realtime -cpu-used 8 -b:v "${kbps}k" \
    -minrate "${kbps}k" -maxrate "${kbps}k" -bufsize "$((kbps / 2))k" \
    -g "$gop" -keyint_min "$gop" -error-resilient default -auto-alt-ref 0 -lag-in-frames 0 \
    -ts-parameters "ts_number_layers=3:ts_target_bitrate=$((kbps * 4 / 10)),$((kbps * 6 / 10)),${kbps}:ts_rate_decimator=4,2,1:ts_periodicity=4:ts_layer_id=0,2,1,2:ts_layering_mode=3" \
    -fflags +bitexact -f ivf "$tmp/$name.ivf"
  ff -i "$tmp/$name.ivf" -ss "$(awk -v g="$gop" -v f="$fps" 'BEGIN { printf "%.4f", (g - 0.5) / f }')" \
    -c copy -fflags +bitexact -f ivf "$out/$name.ivf"
}
vp8 vp8-180p30 320 180 30 150 40
vp8 vp8-360p30 640 360 30 500 40
vp8 vp8-720p30 1280 720 30 2500 40
vp8 vp8-180p15 320 180 15 100 20

# opus NAME: $tmp/NAME.wav → NAME.ogg and NAME.levels
opus() {
  local name=$1
  ff -i "$tmp/$name.wav" -c:a libopus -b:a 32k -vbr on -application voip -frame_duration 20 \
    -fflags +bitexact -map_metadata -1 "$out/$name.ogg"
  # RMS level of each 960-sample (20 ms) frame, as RFC 6464's −dBov, 127 for silence.
  ff -i "$tmp/$name.wav" -af "asetnsamples=n=960:p=0,astats=metadata=1:reset=1,ametadata=print:key=lavfi.astats.Overall.RMS_level:file=$tmp/$name.txt" -f null -
  grep RMS_level "$tmp/$name.txt" | cut -d= -f2 |
    awk '{ v = ($1 == "-inf") ? 127 : int(-$1 + 0.5); if (v > 127) v = 127; if (v < 0) v = 0; printf "%c", v }' >"$out/$name.levels"
}
ff -f lavfi -i "flite=text='Good morning everyone. Let us start with the status of the release. The build is green, and the load tests look fine. Any questions so far? Right. Then we move on to the next item on the list, the new layout for large rooms.':voice=slt" \
  -af "volume=0.25" -ar 48000 -ac 1 "$tmp/speech.wav"
ff -f lavfi -i "anoisesrc=color=pink:amplitude=0.0003:sample_rate=48000:duration=4:seed=7" -ac 1 "$tmp/noise.wav"
opus speech
opus noise
ls -l "$out"
