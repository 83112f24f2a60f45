package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/media"
)

// forwardedCapture collects what the SFU forwards (forward.SetTap) for some sources.
type forwardedCapture struct {
	mu   sync.Mutex
	want map[string]bool
	pkts map[string][]forward.TapPacket // by source and kind
}

// tapForwarded captures the packets the SFU forwards of the given sources until the test ends.
func tapForwarded(t *testing.T, sources ...string) *forwardedCapture {
	c := &forwardedCapture{want: map[string]bool{}, pkts: map[string][]forward.TapPacket{}}
	for _, s := range sources {
		c.add(s)
	}
	forward.SetTap(func(p forward.TapPacket) {
		c.mu.Lock()
		if c.want[p.Source] {
			c.pkts[p.Source+"/"+p.Kind.String()] = append(c.pkts[p.Source+"/"+p.Kind.String()], p)
		}
		c.mu.Unlock()
	})
	t.Cleanup(func() { forward.SetTap(nil) })
	return c
}

// add captures source too.
func (c *forwardedCapture) add(source string) {
	c.mu.Lock()
	c.want[source] = true
	c.mu.Unlock()
}

func (c *forwardedCapture) stop() {
	forward.SetTap(nil)
}

// newestKeyID is the highest E2EE key id in source's forwarded audio so far (-1: none).
func (c *forwardedCapture) newestKeyID(source string) int {
	kid := -1
	for _, p := range c.of(source, webrtc.RTPCodecTypeAudio) {
		kid = max(kid, trailerKID(p.Payload))
	}
	return kid
}

// awaitNewerKey waits up to 2 s for source's forwarded audio to carry a key id
// above kid in a packet that arrived after since, and returns how long after
// since that packet arrived.
func (c *forwardedCapture) awaitNewerKey(t *testing.T, what, source string, kid int, since time.Time) time.Duration {
	t.Helper()
	var after time.Duration
	within(t, what, 2*time.Second, func() (bool, string) {
		for _, p := range c.of(source, webrtc.RTPCodecTypeAudio) {
			if trailerKID(p.Payload) > kid && p.Arrival.After(since) {
				after = p.Arrival.Sub(since)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s's audio still under key id %d", source, kid)
	})
	return after
}

func (c *forwardedCapture) of(source string, kind webrtc.RTPCodecType) []forward.TapPacket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]forward.TapPacket(nil), c.pkts[source+"/"+kind.String()]...)
}

// vp8Frames reassembles the VP8 frames of the stream (SSRC) with the most
// packets, from its first keyframe. Packets are put in sequence order first
// (the tap sees a repaired packet when it arrives, after its successors) and
// duplicates dropped. A frame with a packet missing is left out, and so is
// every frame after it up to the next keyframe: they were predicted from the
// missing one, and would decode without error to the wrong picture.
func vp8Frames(pkts []forward.TapPacket) [][]byte {
	count := map[uint32]int{}
	for _, p := range pkts {
		count[p.SSRC]++
	}
	var ssrc uint32
	for s, n := range count {
		if n > count[ssrc] {
			ssrc = s
		}
	}
	bySeq := map[int64]forward.TapPacket{}
	var last int64 = -1
	for _, p := range pkts {
		if p.SSRC != ssrc {
			continue
		}
		seq := int64(p.Seq)
		if last >= 0 { // unwrap against the previous packet
			seq = last + int64(int16(p.Seq-uint16(last)))
		}
		last = seq
		bySeq[seq] = p
	}
	seqs := make([]int64, 0, len(bySeq))
	for s := range bySeq {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })

	var frames [][]byte
	var cur []byte
	ok, usable := false, false // usable: every frame since the last keyframe is whole
	for i, seq := range seqs {
		p := bySeq[seq]
		if i > 0 && seq != seqs[i-1]+1 { // a packet is missing
			ok, usable = false, false
		}
		var d media.VP8Descriptor
		if media.ParseVP8(p.Payload, &d) != nil {
			ok, usable = false, false
			continue
		}
		body := p.Payload[d.HeaderLen:]
		if d.Start && d.PartitionID == 0 {
			if ok { // the previous frame never ended
				usable = false
			}
			cur, ok = append([]byte(nil), body...), true
			if len(body) > 0 && body[0]&1 == 0 { // a keyframe
				usable = true
			}
		} else if ok {
			cur = append(cur, body...)
		}
		if p.Marker && ok {
			if usable {
				frames = append(frames, cur)
			}
			ok = false
		}
	}
	return frames
}

// writeIVF writes VP8 frames as an IVF file.
func writeIVF(path string, frames [][]byte) error {
	var b bytes.Buffer
	hdr := make([]byte, 32)
	copy(hdr, "DKIF")
	binary.LittleEndian.PutUint16(hdr[6:], 32)
	copy(hdr[8:], "VP80")
	binary.LittleEndian.PutUint16(hdr[12:], 320)
	binary.LittleEndian.PutUint16(hdr[14:], 180)
	binary.LittleEndian.PutUint32(hdr[16:], 30)
	binary.LittleEndian.PutUint32(hdr[20:], 1)
	binary.LittleEndian.PutUint32(hdr[24:], uint32(len(frames)))
	b.Write(hdr)
	for i, f := range frames {
		fh := make([]byte, 12)
		binary.LittleEndian.PutUint32(fh, uint32(len(f)))
		binary.LittleEndian.PutUint64(fh[4:], uint64(i))
		b.Write(fh)
		b.Write(f)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ffmpegDecode decodes an IVF file with ffmpeg (libavcodec's VP8 decoder): the
// mean colour of the centre of every picture it could decode, and its error
// output.
func ffmpegDecode(t *testing.T, path string) (centres [][3]float64, errors string) {
	t.Helper()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not installed")
	}
	cmd := exec.Command(ffmpeg, "-hide_banner", "-v", "error", "-i", path,
		"-vf", "crop=iw*0.4:ih*0.4,scale=1:1:flags=area", "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run() // a failed decode is a result, not a test error
	px := out.Bytes()
	for i := 0; i+3 <= len(px); i += 3 {
		centres = append(centres, [3]float64{float64(px[i]), float64(px[i+1]), float64(px[i+2])})
	}
	return centres, errOut.String()
}

// vp8Decode decodes the VP8 the SFU forwarded for p with ffmpeg: the whole
// frames it reassembled, the pictures ffmpeg made of them, how many of those
// are p's colour, and ffmpeg's error lines.
type vp8Decode struct {
	Frames, Pictures, Matching, Errors int
	Detail                             string
}

func decodeForwarded(t *testing.T, dir string, pkts []forward.TapPacket, p who) vp8Decode {
	t.Helper()
	frames := vp8Frames(pkts)
	path := filepath.Join(dir, p.Name+".ivf")
	if err := writeIVF(path, frames); err != nil {
		t.Fatal(err)
	}
	centres, errs := ffmpegDecode(t, path)
	r := vp8Decode{Frames: len(frames), Pictures: len(centres)}
	for _, c := range centres {
		if n, d := nearest(c[0], c[1], c[2]); n == p.Colour && d <= maxColourDistance {
			r.Matching++
		}
	}
	if s := strings.TrimSpace(errs); s != "" {
		r.Errors = len(strings.Split(s, "\n"))
	}
	r.Detail = fmt.Sprintf("%s: %d packets, %d whole frames, ffmpeg made %d pictures, %d of them %s, %d error lines (%.160q)",
		p.Name, len(pkts), r.Frames, r.Pictures, r.Matching, p.Colour.Name, r.Errors, errs)
	return r
}

// opusTOCShare is the share of audio payloads starting with the most common
// first byte: an Opus packet's TOC byte (mode, bandwidth, frame size) takes
// few values through speech (Chromium: one in 73 % of packets, measured),
// while an encrypted payload's first byte is uniform (about 1/256, plus the
// spread of a few hundred samples).
func opusTOCShare(pkts []forward.TapPacket) float64 {
	count := map[byte]int{}
	best := 0
	for _, p := range pkts {
		if len(p.Payload) == 0 {
			continue
		}
		count[p.Payload[0]]++
		best = max(best, count[p.Payload[0]])
	}
	if len(pkts) == 0 {
		return 0
	}
	return float64(best) / float64(len(pkts))
}

// trailerSizes: the e2ee header of each payload (KID, CTR, config at the end),
// plus the 16-byte tag: the bytes end-to-end encryption adds to each frame.
func trailerSizes(pkts []forward.TapPacket) (min, max int, mean float64) {
	min = 1 << 30
	sum := 0
	for _, p := range pkts {
		cfg := p.Payload[len(p.Payload)-1]
		n := int(cfg>>4) + int(cfg&0x0f) + 1 + 16
		min, max, sum = minInt(min, n), maxInt(max, n), sum+n
	}
	return min, max, float64(sum) / float64(len(pkts))
}

// trailerKID is the key id (KID) an encrypted payload's trailer names, or -1.
func trailerKID(payload []byte) int {
	if len(payload) < 1 {
		return -1
	}
	cfg := payload[len(payload)-1]
	kl, cl := int(cfg>>4), int(cfg&0x0f)
	if kl < 1 || kl > 7 || cl < 1 || cl > 7 || len(payload) < kl+cl+1+16 {
		return -1
	}
	kid := 0
	for _, b := range payload[len(payload)-1-cl-kl : len(payload)-1-cl] {
		kid = kid<<8 | int(b)
	}
	return kid
}

// longestStall is the longest stretch over which frames decoded did not grow,
// at the samples' 200 ms resolution.
func longestStall(ss videoSamples) time.Duration {
	var worst time.Duration
	var last videoSample
	for _, s := range ss {
		if !s.OK {
			continue
		}
		if last.At.IsZero() || s.FramesDecoded > last.FramesDecoded {
			last = s
			continue
		}
		worst = max(worst, s.At.Sub(last.At))
	}
	return worst
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
