package load

import (
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/logging"
	"github.com/pion/rtcp"
	"github.com/pion/sdp/v3"
	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/media"
)

// The light receive mode (Config.Light) lets one box play many more
// receive-only participants. pion still does ICE, DTLS and the RTCP both
// ways, but every RTP datagram is taken off the participant's socket before
// pion sees it and counted from its header, which SRTP leaves in the clear:
// SSRC, payload type, sequence number, marker, the transport-wide sequence
// number. Payloads are neither decrypted nor authenticated nor parsed, so it
// skips the VP8 checks (keyframes, frame sizes, keyframe waits) and audio
// latency; loss is the sequence numbers never received, as a full receiver
// counts it. What the SFU needs back is still sent, through pion's SRTCP:
// transport-wide congestion control feedback every 100 ms, and NACKs for the
// gaps (three tries); no RTX is negotiated, so the SFU resends on the media
// SSRC and a repair fills the gap it left. Receiver reports are not sent.

// lightNACKTries is how many times a missing packet is NACKed.
const lightNACKTries = 3

// lightMaxGap is the largest gap whose packets are NACKed one by one; a
// longer one only counts as loss.
const lightMaxGap = 64

// lightStream is one received SSRC.
type lightStream struct {
	t       *rxTrack
	slot    int // audio slot index, -1 for none
	missing []uint64
	tries   []uint8
}

// lightRx is one light receiver: its streams, whom they carry (from the
// subscribe offers), its transport-wide feedback and its RTCP writer.
type lightRx struct {
	recv *receiver
	ssrc uint32 // ours, as the RTCP sender

	mu      sync.Mutex
	streams map[uint32]*lightStream
	names   map[uint32]string // SSRC → stream id, from the offers
	twccExt uint8
	rec     *twcc.Recorder
	writer  interceptor.RTCPWriter
	nacks   []uint16 // scratch
}

func newLightRx(recv *receiver, seed uint64) *lightRx {
	ssrc := rand.New(rand.NewPCG(seed, 0x11647)).Uint32()
	return &lightRx{recv: recv, ssrc: ssrc, streams: map[uint32]*lightStream{}, names: map[uint32]string{}, rec: twcc.NewRecorder(ssrc)}
}

// learn reads a subscribe offer: the transport-wide sequence number's
// extension id and each SSRC's stream id (its msid).
func (l *lightRx) learn(offer string) {
	var d sdp.SessionDescription
	if d.UnmarshalString(offer) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range d.MediaDescriptions {
		for _, a := range m.Attributes {
			switch a.Key {
			case "extmap":
				id, uri, _ := strings.Cut(a.Value, " ")
				if uri == sdp.TransportCCURI {
					if n, err := strconv.ParseUint(strings.SplitN(id, "/", 2)[0], 10, 8); err == nil {
						l.twccExt = uint8(n)
					}
				}
			case "ssrc":
				ssrc, rest, _ := strings.Cut(a.Value, " ")
				if msid, ok := strings.CutPrefix(rest, "msid:"); ok {
					if n, err := strconv.ParseUint(ssrc, 10, 32); err == nil {
						stream, _, _ := strings.Cut(msid, " ")
						l.names[uint32(n)] = stream
					}
				}
			}
		}
	}
}

// take counts datagram b if it is RTP (reporting true: pion must not see
// it). It runs on the socket's reader.
func (l *lightRx) take(b []byte, now time.Time) bool {
	if !media.IsRTP(b) {
		return false
	}
	var h media.RTPHeader
	if media.ParseSRTPHeader(b, &h) != nil {
		return true // unreadable: dropped, as pion would drop it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.twccExt != 0 {
		if ext, ok := media.FindExtension(b, &h, l.twccExt); ok && len(ext) >= 2 {
			l.rec.Record(h.SSRC, uint16(ext[0])<<8|uint16(ext[1]), now.UnixMicro())
		}
	}
	s := l.streams[h.SSRC]
	if s == nil {
		name, ok := l.names[h.SSRC]
		if !ok {
			return true // not announced (yet): not counted
		}
		s = &lightStream{t: &rxTrack{source: name, video: h.PayloadType != opusPT}, slot: -1}
		if i, ok := slotIndex(name); ok && !s.t.video {
			s.slot = i
		}
		l.streams[h.SSRC] = s
		l.recv.run.tracksMu.Lock()
		l.recv.tracks = append(l.recv.tracks, s.t)
		l.recv.run.tracksMu.Unlock()
	}
	t := s.t
	if t.started {
		ext := t.highest + uint64(int64(int16(h.SequenceNumber-uint16(t.highest))))
		switch {
		case ext > t.highest+1 && ext-t.highest <= lightMaxGap:
			for e := t.highest + 1; e < ext; e++ {
				s.missing = append(s.missing, e)
				s.tries = append(s.tries, 0)
			}
		case ext < t.highest:
			for i, e := range s.missing {
				if e == ext {
					s.missing = append(s.missing[:i], s.missing[i+1:]...)
					s.tries = append(s.tries[:i], s.tries[i+1:]...)
					break
				}
			}
		}
	}
	t.packets.Add(1)
	t.bytes.Add(uint64(len(b)))
	t.last.Store(now.UnixNano())
	t.seq(h.SequenceNumber)
	if h.Marker && t.video {
		t.frames.Add(1)
	}
	if s.slot >= 0 {
		l.recv.slots.credit(s.slot)
	}
	return true
}

// feedback sends the transport-wide feedback gathered since the last call
// (with sendTWCC) and NACKs what is still missing (with sendNACKs); run every
// 100 ms.
func (l *lightRx) feedback(sendTWCC, sendNACKs bool) {
	l.mu.Lock()
	w := l.writer
	var pkts []rtcp.Packet
	if w != nil {
		if l.rec.PacketsHeld() > 0 {
			fb := l.rec.BuildFeedbackPacket() // also forgets what it held
			if sendTWCC {
				pkts = fb
			}
		}
		for ssrc, s := range l.streams {
			if !sendNACKs {
				s.missing, s.tries = s.missing[:0], s.tries[:0]
				continue
			}
			l.nacks = l.nacks[:0]
			keep := 0
			for i, e := range s.missing {
				if s.tries[i] >= lightNACKTries {
					continue // given up: stays lost
				}
				l.nacks = append(l.nacks, uint16(e))
				s.missing[keep], s.tries[keep] = e, s.tries[i]+1
				keep++
			}
			s.missing, s.tries = s.missing[:keep], s.tries[:keep]
			if len(l.nacks) > 0 {
				pkts = append(pkts, &rtcp.TransportLayerNack{SenderSSRC: l.ssrc, MediaSSRC: ssrc, Nacks: rtcp.NackPairsFromSequenceNumbers(l.nacks)})
			}
		}
	}
	l.mu.Unlock()
	if len(pkts) > 0 {
		_, _ = w.Write(pkts, interceptor.Attributes{})
	}
}

// reset retires the streams of a connection that ended.
func (l *lightRx) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recv.run.tracksMu.Lock()
	for _, s := range l.streams {
		for i, t := range l.recv.tracks {
			if t == s.t {
				l.recv.tracks = append(l.recv.tracks[:i], l.recv.tracks[i+1:]...)
				break
			}
		}
		l.recv.run.retire(s.t)
	}
	l.recv.run.tracksMu.Unlock()
	l.streams = map[uint32]*lightStream{}
	l.names = map[uint32]string{}
	l.writer = nil
	l.rec = twcc.NewRecorder(l.ssrc)
}

func (l *lightRx) setWriter(w interceptor.RTCPWriter) {
	l.mu.Lock()
	l.writer = w
	l.mu.Unlock()
}

// opusPT is the payload type newAPI gives Opus (everything else is video).
const opusPT = 111

// lightTap hands the connection's RTCP writer to its light receiver.
type lightTap struct {
	interceptor.NoOp
	l *lightRx
}

func (t *lightTap) BindRTCPWriter(w interceptor.RTCPWriter) interceptor.RTCPWriter {
	t.l.setWriter(w)
	return w
}

func (t *lightTap) NewInterceptor(string) (interceptor.Interceptor, error) { return t, nil }

// lightNet opens sockets whose RTP goes to l instead of pion.
type lightNet struct {
	*stdnet.Net
	l *lightRx
}

func (n *lightNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &lightConn{UDPConn: c, l: n.l}, nil
}

type lightConn struct {
	transport.UDPConn
	l *lightRx
}

// ReadFrom is what ICE reads with: RTP is counted and never returned. The
// sender's address is made into a net.Addr only for what pion gets (a
// plain ReadFrom allocates one per datagram).
func (c *lightConn) ReadFrom(p []byte) (int, net.Addr, error) {
	u, ok := c.UDPConn.(*net.UDPConn)
	if !ok {
		for {
			n, addr, err := c.UDPConn.ReadFrom(p)
			if err != nil || !c.l.take(p[:n], time.Now()) {
				return n, addr, err
			}
		}
	}
	for {
		n, ap, err := u.ReadFromUDPAddrPort(p)
		if err != nil {
			return n, nil, err
		}
		if !c.l.take(p[:n], time.Now()) {
			return n, net.UDPAddrFromAddrPort(ap), nil
		}
	}
}

// newLightAPI is a light receiver's pion API: Opus and VP8 with NACK and
// transport-wide feedback announced but no RTX, no interceptor on received
// RTP (none would see any), l's tap for the RTCP writer, l's sockets.
func newLightAPI(l *lightRx) (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	fb := []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: webrtc.TypeRTCPFBTransportCC}}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
		SDPFmtpLine: "minptime=10;useinbandfec=1", RTCPFeedback: []webrtc.RTCPFeedback{{Type: webrtc.TypeRTCPFBTransportCC}, {Type: "nack"}}}, PayloadType: opusPT}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: videoClockRate, RTCPFeedback: fb}, PayloadType: 96}, webrtc.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		uri  string
		kind webrtc.RTPCodecType
	}{
		{client.AudioLevelURI, webrtc.RTPCodecTypeAudio},
		{sdp.TransportCCURI, webrtc.RTPCodecTypeAudio},
		{sdp.TransportCCURI, webrtc.RTPCodecTypeVideo},
		{sdp.SDESMidURI, webrtc.RTPCodecTypeVideo},
	} {
		if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: x.uri}, x.kind); err != nil {
			return nil, err
		}
	}
	reg := &interceptor.Registry{}
	reg.Add(&lightTap{l: l})
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	var s webrtc.SettingEngine
	s.SetIncludeLoopbackCandidate(true)
	s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	s.SetNet(&lightNet{Net: n, l: l})
	s.LoggerFactory = &logging.DefaultLoggerFactory{Writer: io.Discard, DefaultLogLevel: logging.LogLevelDisabled}
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(s)), nil
}
