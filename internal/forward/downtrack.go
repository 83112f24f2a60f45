package forward

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/packetcache"
	"github.com/podium-sfu/podium/internal/rewrite"
	"github.com/podium-sfu/podium/internal/wire"
)

// cacheSlots is the per-destination retransmission history (what was sent and
// how it was rewritten; the packets are kept once per source, see sentLog).
const cacheSlots = storeSlots

var errNoCodec = errors.New("receiver does not support the codec")

// DownTrack is one source as sent to one receiver: a pion TrackLocal whose packets
// come from UpTrack.forward. For video it projects the source's simulcast encodings
// into one continuous stream (rewrite.Projector); it answers the receiver's NACKs
// from the source's store, rewritten again as its log of what it sent says.
type DownTrack struct {
	// The fields a packet's write reads or writes come first, together: on a
	// busy box a destination's state is cold by its next packet, and each cache
	// line it touches is a miss (docs/performance-history.md, "A smaller footprint per
	// destination").
	selected atomic.Bool                // the selection policy's verdict (Last N); audio ignores it
	bypassed atomic.Bool                // the receiver gets this source peer to peer: nothing is forwarded (SetBypassed)
	redOn    atomic.Bool                // audio: the room lets RED through, when negotiated (SetRED)
	accepts  atomic.Uint32              // video: bit e set when encoding e's packets may be forwarded
	link     atomic.Pointer[Link]       // the receiver connection's congestion control (nil: none)
	route    atomic.Pointer[wire.Route] // the receiver connection's data-plane route (nil: pion sends)
	breaks   atomic.Uint64              // video: the receiver's picture broke (Breaks)

	// mu guards everything below but the last four fields. On the own data
	// plane it is never held across a system call: packets are protected into
	// the caller's wire.Batch, which its owner flushes after unlocking. Not a
	// leaf: sending takes the Link's mu inside it (DownTrack.mu, then Link.mu;
	// never the other way round).
	mu          sync.Mutex
	mode        wire.Mode // how this track's RTP is sent, fixed at its first packet
	bound       bool
	plainAudio  bool // audio: never RED (SetPlainAudio)
	pt          uint8
	redPT       uint8   // audio: RED's payload type when the receiver negotiated it (red.go; 0: plain Opus)
	playoutID   uint8   // negotiated playout-delay extension id (0: none)
	playoutExt  [3]byte // hdr's playout delay, when the link asks one
	twccExt     [2]byte // hdr's transport-wide sequence number
	ssrc        uint32
	sentPackets uint32
	sentOctets  uint32             // payload bytes, as sender reports count them
	seal        *wire.RTPSealer    // mode Own: protects our SSRCs (media and RTX), only ours
	slot        *slot              // an audio slot's source and numbering (nil: one source's track)
	proj        *rewrite.Projector // video only
	sent        *sentLog           // video: what was sent, for NACKs
	resyncDue   int64              // unix nanos: give up resyncSegment then (resyncLocked); 0: none
	counters    DownCounters
	hdr         rtp.Header // scratch, reused for every write

	// Less often: repairs, layer changes, negotiation, reports.
	fb            *wire.Batch // the feedback reader's batch (NACK answers)
	writer        webrtc.TrackLocalWriter
	rtxSSRC       uint32
	rtxPT         uint8
	rtxSeq        uint16
	ups           [rewrite.MaxEncodings]*UpTrack // video: the source's encodings
	layer         int                            // wanted encoding while selected
	suspended     bool                           // video off for lack of bandwidth
	temporal      int                            // highest temporal layer wanted
	rtxBuf        []byte                         // a stored packet being resent
	rtxOut        []byte                         // its RTX payload
	resyncSegment uint64                         // the segment a held resync is for
	writeRTCP     func([]rtcp.Packet) error      // the receiver connection's, for sender reports
	sr            srScratch                      // the sender report relayed, reused

	// Set once by NewDownTrack, read without mu.
	up       *UpTrack // the first track of the source; names the DownTrack
	receiver string   // receiving participant's id
	id       string
	streamID string
}

// DownCounters count what a DownTrack did with the packets offered to it; read
// by metrics at scrape time (Counters), updated under the lock write holds anyway.
type DownCounters struct {
	Packets uint64 // written to the receiver
	Bytes   uint64 // their RTP bytes: our 12-byte header and the payload
	// Packets not written, by reason.
	DroppedUnbound   uint64 // the receiver had not completed negotiation
	DroppedLayer     uint64 // held back by the projection: waiting for a keyframe, another encoding, a temporal layer above the one wanted
	DroppedSendError uint64 // the connection refused the write
	DroppedSwitched  uint64 // audio slot: a packet of a former source, or older than its source's first
	Fills            uint64 // padding-only packets sent under the number of a late packet dropped (fillLocked)
}

// Breaks counts the times the receiver's picture of this video broke: a
// segment given up for a loss that could not be repaired, or the receiver's
// own keyframe request (PLI, FIR).
func (d *DownTrack) Breaks() uint64 { return d.breaks.Load() }

// Counters reads the DownTrack's counters.
func (d *DownTrack) Counters() DownCounters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counters
}

// NewDownTrack prepares up's source for sending to receiver; add it to the
// receiver's subscribe connection, then to up with AddDown (and to the source's
// other encodings with Attach and AddDown).
func NewDownTrack(up *UpTrack, receiver string) *DownTrack {
	d := &DownTrack{
		up:       up,
		receiver: receiver,
		id:       up.Kind().String() + "-" + up.Source(),
		streamID: up.Source(),
		temporal: 2,
	}
	d.selected.Store(true)
	if up.Kind() == webrtc.RTPCodecTypeVideo {
		d.proj = rewrite.NewProjector()
		d.ups[up.Encoding()] = up
		d.layer = up.Encoding()
		d.sent = newSentLog(cacheSlots)
		d.rtxBuf = make([]byte, 0, packetcache.DefaultSlotSize)
		d.rtxOut = make([]byte, packetcache.DefaultSlotSize+2)
		d.retargetLocked()
	}
	return d
}

// TransportCCURI is the transport-wide sequence number header extension.
const TransportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

// PlayoutDelayURI is the playout-delay header extension: the least and largest
// delay a receiver should play video with (algo/playout).
const PlayoutDelayURI = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"

// SetLink puts the DownTrack under its receiver connection's congestion control
// (nil takes it out): its packets carry the connection's transport-wide
// sequence numbers, and its video can carry probe padding. Call it before the
// track is negotiated, and with nil when it is removed.
func (d *DownTrack) SetLink(l *Link) {
	if old := d.link.Swap(l); old != nil {
		old.unbindSSRC(d)
		if d.proj != nil {
			old.removeDown(d)
		}
	}
	if l != nil && d.proj != nil {
		l.addDown(d)
	}
}

// SetRoute sends the DownTrack's RTP through the receiver connection's
// data-plane route (nil: through pion). Call it before the track is bound.
func (d *DownTrack) SetRoute(r *wire.Route) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.route.Swap(r) != r {
		d.mode, d.seal = wire.Pending, nil
	}
}

// Up is the forwarded source track.
func (d *DownTrack) Up() *UpTrack { return d.up }

// Receiver is the receiving participant's id.
func (d *DownTrack) Receiver() string { return d.receiver }

// SetSelected turns forwarding of video on or off (audio is always forwarded).
// Turning it on resumes at the next keyframe, so the receiver never gets
// undecodable frames.
func (d *DownTrack) SetSelected(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.selected.Load() == on {
		return
	}
	d.selected.Store(on)
	d.retargetLocked()
}

// SetSuspended turns video off (on) for lack of bandwidth, or back on at the
// next keyframe; unlike SetSelected it leaves the selection policy's verdict alone.
func (d *DownTrack) SetSuspended(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.suspended == on {
		return
	}
	d.suspended = on
	d.retargetLocked()
}

// SetLayer sets the encoding (0 = lowest) and highest temporal layer this receiver
// should get; a different encoding is switched to at its next keyframe.
func (d *DownTrack) SetLayer(encoding, temporal int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proj == nil || encoding == d.layer && temporal == d.temporal {
		return
	}
	d.layer, d.temporal = encoding, temporal
	d.retargetLocked()
}

// ShedLayer is SetLayer for a downgrade forced by bandwidth: the encoding being
// forwarded, when above the new one, stops at once instead of at the new
// one's keyframe, which would otherwise queue behind it on the congested link
// (freezing the video longer than the switch needs).
func (d *DownTrack) ShedLayer(encoding, temporal int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proj == nil {
		return
	}
	d.layer, d.temporal = encoding, temporal
	if cur := d.proj.Current(); cur > encoding {
		d.proj.EncodingStopped(cur)
	}
	d.retargetLocked()
}

// Layers reports the wanted encoding and the one being forwarded (-1: none yet).
func (d *DownTrack) Layers() (target, current int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proj == nil {
		return -1, -1
	}
	return d.layer, d.proj.Current()
}

// Attach adds another encoding of the source (simulcast).
func (d *DownTrack) Attach(up *UpTrack) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proj != nil {
		d.ups[up.Encoding()] = up
	}
}

// Detach removes an encoding that ended and reports how many remain.
func (d *DownTrack) Detach(up *UpTrack) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proj == nil {
		return 0
	}
	if d.ups[up.Encoding()] == up {
		d.ups[up.Encoding()] = nil
		d.proj.EncodingStopped(up.Encoding())
		d.retargetLocked()
	}
	n := 0
	for _, u := range d.ups {
		if u != nil {
			n++
		}
	}
	return n
}

// EncodingStopped tells the projection that an encoding no longer sends (the
// sender disabled it), so it switches to the target at its next keyframe at once.
func (d *DownTrack) EncodingStopped(encoding int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proj != nil {
		d.proj.EncodingStopped(encoding)
		d.retargetLocked()
	}
}

// retargetLocked pushes the selection and layer into the projection and updates
// which encodings accept lets through.
func (d *DownTrack) retargetLocked() {
	if d.proj == nil {
		return
	}
	target := -1
	if d.forwardingLocked() {
		target = d.layer
	}
	d.proj.SetTarget(target, d.temporal)
	d.updateAcceptsLocked()
}

func (d *DownTrack) updateAcceptsLocked() {
	var mask uint32
	if cur := d.proj.Current(); cur >= 0 {
		mask |= 1 << cur
	}
	if d.forwardingLocked() {
		mask |= 1 << d.layer
	}
	if d.accepts.Load() != mask { // written under mu only; a store is a locked instruction, per packet
		d.accepts.Store(mask)
	}
}

// forwardingLocked: selected by the policy, not suspended for bandwidth, and
// not received peer to peer.
func (d *DownTrack) forwardingLocked() bool {
	return d.selected.Load() && !d.suspended && !d.bypassed.Load()
}

// ID implements webrtc.TrackLocal.
func (d *DownTrack) ID() string { return d.id }

// RID implements webrtc.TrackLocal.
func (d *DownTrack) RID() string { return "" }

// StreamID implements webrtc.TrackLocal: the source participant's id, which is how
// clients map tracks to tiles.
func (d *DownTrack) StreamID() string { return d.streamID }

// Kind implements webrtc.TrackLocal.
func (d *DownTrack) Kind() webrtc.RTPCodecType {
	if d.slot != nil {
		return webrtc.RTPCodecTypeAudio
	}
	return d.up.Kind()
}

// Bind implements webrtc.TrackLocal: pion calls it once the receiver's answer fixed
// the payload types and our SSRCs.
func (d *DownTrack) Bind(ctx webrtc.TrackLocalContext) (webrtc.RTPCodecParameters, error) {
	var want webrtc.RTPCodecCapability
	if d.slot != nil {
		want = d.slot.codec
	} else {
		want = d.up.Codec()
	}
	var codec *webrtc.RTPCodecParameters
	for i, c := range ctx.CodecParameters() {
		if strings.EqualFold(c.MimeType, want.MimeType) {
			codec = &ctx.CodecParameters()[i]
			break
		}
	}
	if codec == nil {
		return webrtc.RTPCodecParameters{}, errNoCodec
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.playoutID = 0
	for _, x := range ctx.HeaderExtensions() {
		if l := d.link.Load(); l != nil && x.URI == TransportCCURI {
			l.setExtension(uint8(x.ID)) // the same id for every track of the connection
		}
		if x.URI == PlayoutDelayURI && d.slot == nil && d.up.Kind() == webrtc.RTPCodecTypeVideo {
			d.playoutID = uint8(x.ID)
		}
	}
	d.bound = true
	d.writer = ctx.WriteStream()
	d.ssrc = uint32(ctx.SSRC())
	if l := d.link.Load(); l != nil {
		l.bindSSRC(d.ssrc, d)
	}
	d.pt = uint8(codec.PayloadType)
	d.redPT = 0
	if d.proj == nil && !d.plainAudio {
		d.redPT = redPayloadType(ctx.CodecParameters(), codec.PayloadType)
	}
	d.rtxSSRC, d.rtxPT = 0, 0
	if rtx := findRTX(ctx.CodecParameters(), codec.PayloadType); rtx != 0 && ctx.SSRCRetransmission() != 0 {
		d.rtxSSRC, d.rtxPT = uint32(ctx.SSRCRetransmission()), rtx
	}
	return *codec, nil
}

// Unbind implements webrtc.TrackLocal.
func (d *DownTrack) Unbind(webrtc.TrackLocalContext) error {
	d.mu.Lock()
	d.bound = false
	d.writer = nil
	d.mu.Unlock()
	if l := d.link.Load(); l != nil {
		l.unbindSSRC(d)
	}
	return nil
}

func findRTX(codecs []webrtc.RTPCodecParameters, apt webrtc.PayloadType) uint8 {
	want := "apt=" + strconv.Itoa(int(apt))
	for _, c := range codecs {
		if strings.EqualFold(c.MimeType, webrtc.MimeTypeRTX) && strings.Contains(c.SDPFmtpLine, want) {
			return uint8(c.PayloadType)
		}
	}
	return 0
}

// accept is thesis Algorithm 1's decision for this destination; it never modifies p.
// Audio goes through unless bypassed (SetBypassed); video only while selected, and only the encodings
// being forwarded or switched to.
func (d *DownTrack) accept(p *Packet) bool {
	if d.proj == nil {
		return !d.bypassed.Load()
	}
	return d.accepts.Load()&(1<<p.Encoding) != 0
}

// write is the send pipeline for one packet: projection (keyframe gate, layer
// switch, rewrite), cache, hand to pion (SRTP). It reports whether the packet was
// sent, and the encoding that should be asked for a keyframe (nil: none).
func (d *DownTrack) write(p *Packet, batch *wire.Batch) (sent bool, wantKeyframe *UpTrack) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.bound {
		d.counters.DroppedUnbound++
		return false, nil
	}
	if d.slot != nil {
		return d.writeSlotLocked(p, batch), nil
	}
	if d.proj == nil {
		d.fillHeader(p)
		payload, pt := d.audioPayloadLocked(p, redDepth)
		d.hdr.PayloadType = pt
		err := d.sendLocked(payload, false, batch)
		d.countSentLocked(len(payload), err)
		return err == nil, nil
	}
	if d.resyncDue != 0 && !p.Keyframe && p.Arrival.UnixNano() >= d.resyncDue {
		d.heldResyncLocked()
	}
	out, forward := d.proj.Project(p.Arrival, p.Encoding, &p.Header, &p.VP8, p.Keyframe)
	if forward && p.Keyframe {
		d.resyncDue = 0 // the receiver decodes again from here
	}
	d.updateAcceptsLocked()
	if !forward {
		d.counters.DroppedLayer++
		if out.Fill {
			d.fillLocked(out, batch)
		}
		if enc, ok := d.proj.WantsKeyframe(); ok {
			return false, d.ups[enc]
		}
		return false, nil
	}
	// Rewrite, send, restore (mediasoup's SimulcastConsumer): the descriptor
	// is rewritten in the shared packet, which the sealer then reads straight
	// into this destination's slot (or pion copies), and put back for the
	// next destination. The header is d.hdr's, marshalled per destination.
	payload := p.Buf[p.Header.PayloadOffset:p.Header.PayloadEnd]
	var orig [rewrite.VP8DescriptorMax]byte
	saved := copy(orig[:], payload)
	if rewrite.ApplyPayload(payload, out) != nil {
		d.counters.DroppedLayer++
		return false, nil
	}
	d.fillHeader(p)
	d.hdr.SequenceNumber, d.hdr.Timestamp, d.hdr.Marker = out.SequenceNumber, out.Timestamp, out.Marker
	d.sent.add(out, p.Encoding, p.Header.SequenceNumber, p.Header.Timestamp, !p.VP8.HasTID || p.VP8.TID == 0, len(payload), p.Arrival)
	err := d.sendLocked(payload, false, batch)
	copy(payload, orig[:saved])
	d.countSentLocked(len(payload), err)
	return err == nil, nil
}

// fillPadding is a fill packet's padding: RTP's least.
const fillPadding = 1

// fillLocked sends a padding-only packet under the number the projection
// had reserved for a late packet it then dropped (Output.Fill): receivers
// take padding for a packet received, so the number is not a loss that no
// NACK could repair (lost relayed packets of a temporal layer the receiver
// does not get arrive late, repaired on the relay hop).
func (d *DownTrack) fillLocked(out rewrite.Output, batch *wire.Batch) {
	h := &d.hdr
	h.Version, h.Padding, h.PaddingSize, h.Marker = 2, true, fillPadding, false
	h.Extension, h.Extensions, h.CSRC = false, h.Extensions[:0], h.CSRC[:0]
	h.PayloadType, h.SequenceNumber, h.Timestamp, h.SSRC = d.pt, out.SequenceNumber, out.Timestamp, d.ssrc
	d.sentPackets++ // sender reports count padding packets, with no payload octets
	if d.sendLocked(nil, false, batch) == nil {
		d.counters.Fills++
	}
}

// sendLocked writes d.hdr and payload (probe: a padding-only probe),
// stamped with the connection's transport-wide sequence number when it has
// congestion control: on the own data plane protected into out, which the
// caller flushes after unlocking; else through pion.
func (d *DownTrack) sendLocked(payload []byte, probe bool, out *wire.Batch) error {
	l := d.link.Load()
	mode, dest := d.pathLocked()
	switch {
	case mode == wire.Pending:
		return errNotConnected
	case mode == wire.Own && dest == nil:
		return errNoPath
	case mode == wire.Own && (out == nil || out.Free() == 0):
		return errBatchFull
	case mode == wire.Own:
		if l == nil {
			return d.protectLocked(payload, dest, out)
		}
		l.mu.Lock()
		seq, stamped := l.stampLocked(&d.hdr, &d.twccExt, len(payload), probe, true)
		l.mu.Unlock()
		if err := d.protectLocked(payload, dest, out); err != nil {
			return err
		}
		if stamped {
			out.Stamp(l, seq) // its send time: when the flush hands it over
		}
		return nil
	}
	if l == nil {
		_, err := d.writer.WriteRTP(&d.hdr, payload)
		return err
	}
	l.mu.Lock()
	l.stampLocked(&d.hdr, &d.twccExt, len(payload), probe, false)
	_, err := d.writer.WriteRTP(&d.hdr, payload)
	l.mu.Unlock()
	return err
}

var (
	errNotConnected = errors.New("the receiver's connection is not secured yet")
	errNoPath       = errors.New("no UDP path to the receiver")
	errBatchFull    = errors.New("send batch full")
)

// pathLocked decides, at the first packet once the connection is secured,
// whether this track's RTP is ours to protect and send or pion's, and keeps
// that answer: an SSRC protected by two contexts would repeat packet indexes.
func (d *DownTrack) pathLocked() (wire.Mode, *wire.Dest) {
	r := d.route.Load()
	if d.mode == wire.Pending {
		mode, keys := r.Decide()
		if mode == wire.Own {
			seal, err := keys.RTPSealer()
			if err != nil {
				mode = wire.Pion
			} else {
				d.seal = seal
			}
		}
		d.mode = mode
	}
	if d.mode == wire.Own {
		return wire.Own, r.Dest()
	}
	return d.mode, nil
}

// protectLocked marshals d.hdr into out's next slot, protects the packet
// there with the track's sealer (reading payload where it is) and queues it
// for dest. A header with padding has the payload and padding copied after it
// and sealed in place.
func (d *DownTrack) protectLocked(payload []byte, dest *wire.Dest, out *wire.Batch) error {
	slot := out.Slot()
	plain := slot[:cap(slot)]
	n, err := d.hdr.MarshalTo(plain)
	if err != nil {
		return err
	}
	headerLen := n
	pad := 0
	if d.hdr.Padding {
		pad = int(d.hdr.PaddingSize)
	}
	if n+len(payload)+pad+wire.Overhead > len(plain) {
		return errTooLarge
	}
	if pad == 0 {
		ct, err := d.seal.SealAfter(plain[:n], payload)
		if err != nil {
			return err
		}
		out.Commit(len(ct), dest)
		return nil
	}
	n += copy(plain[n:], payload)
	if pad > 0 {
		clear(plain[n : n+pad-1])
		plain[n+pad-1] = byte(pad)
		n += pad
	}
	ct, err := d.seal.Seal(slot, plain[:n], headerLen)
	if err != nil {
		return err
	}
	out.Commit(len(ct), dest)
	return nil
}

var errTooLarge = errors.New("packet too large")

// countSentLocked counts a write: sender reports count every packet handed to
// the connection, metrics only those it took.
func (d *DownTrack) countSentLocked(payload int, err error) {
	d.sentPackets++
	d.sentOctets += uint32(payload)
	if err != nil {
		d.counters.DroppedSendError++
		return
	}
	d.counters.Packets++
	d.counters.Bytes += uint64(rtpHeaderLen + payload)
}

// fillHeader rewrites what differs per destination (SSRC, payload type) and drops the
// sender's header extensions, whose ids were negotiated on another connection.
func (d *DownTrack) fillHeader(p *Packet) {
	h := &d.hdr
	h.Version = 2
	h.Padding = false
	h.PaddingSize = 0
	h.Extension = false
	h.Extensions = h.Extensions[:0]
	h.CSRC = h.CSRC[:0]
	h.Marker = p.Header.Marker
	h.PayloadType = d.pt
	h.SequenceNumber = p.Header.SequenceNumber
	h.Timestamp = p.Header.Timestamp
	h.SSRC = d.ssrc
	if d.playoutID != 0 {
		if l := d.link.Load(); l != nil {
			if ext, ok := l.playoutDelay(); ok {
				d.playoutExt = ext
				_ = h.SetExtension(d.playoutID, d.playoutExt[:]) // only fails for an id the answer could not hold
			}
		}
	}
}
