package room

import (
	"slices"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/overload"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// Media kinds, as Totals index them.
const (
	KindAudio = iota
	KindVideo
	numKinds
)

// KindName names a Totals index ("audio", "video").
func KindName(k int) string {
	if k == KindAudio {
		return "audio"
	}
	return "video"
}

func kindIndex(k webrtc.RTPCodecType) int {
	if k == webrtc.RTPCodecTypeAudio {
		return KindAudio
	}
	return KindVideo
}

// Reasons a packet is not forwarded, as Totals count them.
const (
	DropMalformed = iota // not RTP, or a broken VP8 descriptor
	DropPadding          // padding only (bandwidth probes)
	DropUnwanted         // a simulcast encoding nobody receives
	DropMuted            // the sender is muted by an administrator
	DropUnbound          // the receiver had not completed negotiation
	DropLayer            // held back by the projection (keyframe wait, layer switch, temporal layer)
	DropSendError        // the receiver's connection refused the write
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"malformed", "padding", "unwanted-encoding", "muted", "not-negotiated", "layer", "send-error"}

// DropReason names a drop reason for metrics labels.
func DropReason(i int) string { return dropNames[i] }

// KindTotals are the counters of one media kind.
type KindTotals struct {
	PacketsIn, BytesIn   uint64 // received from senders
	PacketsOut, BytesOut uint64 // written to receivers
	Keyframes            uint64 // keyframes received
	NACKs                uint64 // sequence numbers receivers asked for again
	Retransmissions      uint64 // answered from the cache
	KeyframeRequestsIn   uint64 // PLI/FIR from receivers
	KeyframeRequestsOut  uint64 // keyframe requests sent to senders
	Dropped              [NumDropReasons]uint64
}

// Totals are the forwarding counters of a room (or a whole hub): monotonic sums
// over every track that lived there, read from the tracks' own counters.
type Totals struct {
	Kinds     [numKinds]KindTotals
	Bandwidth BandwidthTotals
	P2P       P2PTotals
}

// BandwidthTotals count what bandwidth adaptation did, over every receiver.
type BandwidthTotals struct {
	LayerSwitches      uint64 // allocation changes of playing videos
	ProbeBytes         uint64 // padding sent to probe for bandwidth
	RetransmitsDropped uint64 // NACK answers over the retransmission budget
}

// addReceiver counts what adaptation did for m.
func (b *BandwidthTotals) addReceiver(m *member) {
	var ls *forward.LinkStats
	if l := m.m.Link(); l != nil {
		s := l.Stats()
		ls = &s
	}
	b.add(m, ls)
}

// add counts m's switches and, when it has congestion control, its link's
// counters ls (read once by the caller).
func (b *BandwidthTotals) add(m *member, ls *forward.LinkStats) {
	b.LayerSwitches += uint64(m.bw.switches)
	if ls != nil {
		b.ProbeBytes += ls.ProbeBytes
		b.RetransmitsDropped += ls.RetransmitsDropped
	}
}

// Add adds o's counters to t.
func (t *Totals) Add(o *Totals) {
	t.Bandwidth.LayerSwitches += o.Bandwidth.LayerSwitches
	t.Bandwidth.ProbeBytes += o.Bandwidth.ProbeBytes
	t.Bandwidth.RetransmitsDropped += o.Bandwidth.RetransmitsDropped
	t.P2P.ToP2P += o.P2P.ToP2P
	t.P2P.ToSFU += o.P2P.ToSFU
	t.P2P.Failures += o.P2P.Failures
	for k := range t.Kinds {
		a, b := &t.Kinds[k], &o.Kinds[k]
		a.PacketsIn += b.PacketsIn
		a.BytesIn += b.BytesIn
		a.PacketsOut += b.PacketsOut
		a.BytesOut += b.BytesOut
		a.Keyframes += b.Keyframes
		a.NACKs += b.NACKs
		a.Retransmissions += b.Retransmissions
		a.KeyframeRequestsIn += b.KeyframeRequestsIn
		a.KeyframeRequestsOut += b.KeyframeRequestsOut
		for i := range a.Dropped {
			a.Dropped[i] += b.Dropped[i]
		}
	}
}

// addUp counts a received track.
func (t *Totals) addUp(up *forward.UpTrack) {
	k := &t.Kinds[kindIndex(up.Kind())]
	st := up.Stats()
	k.PacketsIn += st.Packets.Load()
	k.BytesIn += st.Bytes.Load()
	k.Keyframes += st.Keyframes.Load()
	k.NACKs += st.NACKs.Load()
	k.Retransmissions += st.Retransmissions.Load()
	k.KeyframeRequestsIn += st.ReceiverKeyframes.Load()
	k.KeyframeRequestsOut += st.KeyframeRequests.Load()
	k.Dropped[DropMalformed] += st.Malformed.Load()
	k.Dropped[DropPadding] += st.DroppedPadding.Load()
	k.Dropped[DropUnwanted] += st.DroppedUnwanted.Load()
	k.Dropped[DropMuted] += st.DroppedMuted.Load()
}

// addDown counts a forwarded stream.
func (t *Totals) addDown(d *forward.DownTrack) {
	k := &t.Kinds[kindIndex(d.Kind())]
	c := d.Counters()
	k.PacketsOut += c.Packets
	k.BytesOut += c.Bytes
	k.Dropped[DropUnbound] += c.DroppedUnbound
	k.Dropped[DropLayer] += c.DroppedLayer
	k.Dropped[DropSendError] += c.DroppedSendError
}

// Stats is a room as the admin API and metrics see it.
type Stats struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	LastN   int       `json:"lastN"`
	OnStage []string  `json:"onStage"`
	// E2EERequired refuses joins without e2ee; Unencrypted counts the
	// participants in the room that did not announce it.
	E2EERequired bool `json:"e2eeRequired"`
	Unencrypted  int  `json:"unencrypted"`
	// P2P: the room allows direct connections (its setting). P2PMode: its two
	// participants were told to connect directly; P2PDirect counts those whose
	// client reports the direct connection up (the SFU forwards them nothing).
	P2P          bool               `json:"p2p"`
	P2PMode      bool               `json:"p2pMode"`
	P2PDirect    int                `json:"p2pDirect"`
	AudioSlots   int                `json:"audioSlots"` // the room's audio selection (audioslots.go); 0: off
	Speaker      string             `json:"speaker"`
	Speakers     []string           `json:"speakers"` // the order Last N selects from: on stage, then the latest speaker first
	Participants []ParticipantStats `json:"participants"`
	// Tracks counts received tracks by kind (each simulcast encoding is one);
	// Forwarding counts the streams being sent to receivers by kind (video that
	// Last N switched off excluded).
	Tracks     map[string]int `json:"tracks"`
	Forwarding map[string]int `json:"forwardedStreams"`
	Totals     Totals         `json:"-"`
	// Shed is the overload protection's ceiling on the room's video while it
	// sheds (overload.go); nil otherwise.
	Shed *overload.Cap `json:"shed,omitempty"`
}

// ParticipantStats is one participant with what it sends and receives.
type ParticipantStats struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	Identity    string             `json:"identity,omitempty"`
	Permissions signal.Permissions `json:"permissions"`
	Joined      time.Time          `json:"joined"`
	AudioMuted  bool               `json:"audioMuted"`
	VideoMuted  bool               `json:"videoMuted"`
	// E2EE: its join said it encrypts its media end to end.
	E2EE bool `json:"e2ee"`
	// AdminMuted is what an administrator muted: that media is dropped.
	AdminMuted signal.Muted `json:"adminMuted"`
	// VideoPaused: nobody receives its video, so it was told to stop sending.
	VideoPaused bool             `json:"videoPaused"`
	Publishing  []PublishedTrack `json:"publishing"`
	// Screen is its screen share's source id while it shares; the share's
	// tracks are in Publishing with source "screen".
	Screen string `json:"screen,omitempty"`
	// Receiving is the number of streams sent to it; Forwarded the sources whose
	// video it now gets (Last N), LastN the most it asked for (-1: the room's).
	Receiving    int      `json:"receiving"`
	Forwarded    []string `json:"forwarded"`
	LastN        int      `json:"lastN"`
	RTTPublishMS float64  `json:"rttPublishMs"`
	RTTReceiveMS float64  `json:"rttSubscribeMs"`
	PacketsOut   uint64   `json:"packetsSent"`
	BytesOut     uint64   `json:"bytesSent"`
	// Downlink is its bandwidth estimate and the layers allocated under it (nil
	// when its connection has no congestion control).
	Downlink *DownlinkStats `json:"downlink,omitempty"`
}

// DownlinkStats is a receiver's bandwidth adaptation: what its client is told
// (signal.Stats) and the estimator's and repair's inner state.
type DownlinkStats struct {
	signal.Stats
	DelayBased         int     `json:"delayBased"`
	LossBased          int     `json:"lossBased"`
	Acked              int     `json:"acked"`
	LossFraction       float64 `json:"lossFraction"`
	RTTMS              float64 `json:"rttMs"`
	ProbeClusters      int     `json:"probeClusters"`
	ProbeWins          int     `json:"probeWins"`   // clusters that raised the estimate
	LastProbe          int     `json:"lastProbe"`   // rate the last cluster proved, bits/s (0: nothing)
	ProbeTarget        int     `json:"probeTarget"` // what the prober climbs toward, bits/s (0: nothing held back)
	Overuses           int     `json:"overuses"`    // decreases on overuse
	Usage              string  `json:"usage"`       // the delay detector's hypothesis now
	ProbeBytes         uint64  `json:"probeBytes"`
	Feedbacks          uint64  `json:"transportFeedbacks"`
	Retransmits        uint64  `json:"retransmits"`
	RetransmitsDropped uint64  `json:"retransmitsOverBudget"`
	NACKsSkipped       uint64  `json:"nacksSkipped"`
	Resyncs            uint64  `json:"resyncs"`     // segments given up for an unrepairable base-layer loss
	ResyncsHeld        uint64  `json:"resyncsHeld"` // such losses not given up, their segment younger than the hold
	// PlayoutDelayMS is the least playout delay asked of the receiver's video
	// (algo/playout; 0: none).
	PlayoutDelayMS float64 `json:"playoutDelayMs"`
	// QueueMS is the queueing delay the estimator sees on the path now;
	// Competing says it holds its share on loss beside flows that fill the
	// queue, CompeteEntries how often it switched to that (bwe compete.go).
	QueueMS        float64 `json:"queueMs"`
	Competing      bool    `json:"competing"`
	CompeteEntries int     `json:"competeEntries"`
	// BreakCeilings are the encodings its videos are held at or below for
	// breaks on a crowded path (alloc.BreakCeiling), by source; only those held.
	BreakCeilings map[string]int `json:"breakCeilings,omitempty"`
	// SwitchEvents are its latest layer switches, oldest first.
	SwitchEvents []SwitchEvent `json:"switchEvents"`
}

// PublishedTrack is one received track (one simulcast encoding).
type PublishedTrack struct {
	Kind             string `json:"kind"`
	Source           string `json:"source"` // "camera" (camera and microphone) or "screen" (screen share)
	RID              string `json:"rid,omitempty"`
	Packets          uint64 `json:"packets"`
	Bytes            uint64 `json:"bytes"`
	BitrateBps       int    `json:"bitrate"`
	Width            int    `json:"width,omitempty"`
	Height           int    `json:"height,omitempty"`
	Keyframes        uint64 `json:"keyframes"`
	KeyframeRequests uint64 `json:"keyframeRequests"`
	NACKs            uint64 `json:"nacks"`
	Retransmissions  uint64 `json:"retransmissions"`
	Malformed        uint64 `json:"malformed"`
}

// Stats reads the room on its loop; false when the room has ended meanwhile
// (then FinalTotals has its counters).
func (r *Room) Stats(now time.Time) (Stats, bool) {
	var out Stats
	ok := r.do(func(s *state) { out = s.stats(r.name, now) })
	return out, ok
}

// FinalTotals are the counters of a room that has ended (Stats returned false).
func (r *Room) FinalTotals() Totals {
	<-r.done
	return r.state.retired
}

func (s *state) stats(name string, now time.Time) Stats {
	st := Stats{Name: name, Created: s.created, LastN: s.settings.LastN, OnStage: slices.Clone(s.onStage), Speaker: s.dominant,
		E2EERequired: s.settings.E2EERequired, Unencrypted: s.unencrypted(), P2P: !s.settings.NoP2P,
		Participants: []ParticipantStats{}, Tracks: map[string]int{"audio": 0, "video": 0}, Forwarding: map[string]int{"audio": 0, "video": 0},
		Totals: s.retired}
	st.P2PMode, st.P2PDirect = s.p2pStats()
	st.AudioSlots = s.settings.AudioSlots
	st.Speakers = idStrings(s.order.IDs())
	st.Shed = s.settings.Shed
	for _, m := range s.sorted() {
		if isRemote(m.m) {
			continue // served by another bridge, which lists it (remote.go)
		}
		p := ParticipantStats{ID: m.info.ID, Name: m.info.Name, Identity: m.identity, Permissions: m.perms, Joined: m.joined,
			AudioMuted: m.info.AudioMuted, VideoMuted: m.info.VideoMuted, AdminMuted: signal.Muted{Audio: m.mutedAudio, Video: m.mutedVideo},
			VideoPaused: m.paused, Publishing: []PublishedTrack{}, Forwarded: idStrings(m.forwarded), LastN: m.wantN, Screen: m.info.Screen,
			E2EE: m.info.E2EE}
		pub, sub := m.m.RTT()
		p.RTTPublishMS, p.RTTReceiveMS = float64(pub)/1e6, float64(sub)/1e6
		for _, up := range m.publishedUps() {
			source := "camera"
			if m.sharing(up) {
				source = "screen"
			}
			st.Tracks[up.Kind().String()]++
			st.Totals.addUp(up)
			c := up.Stats()
			w, h := up.Size()
			p.Publishing = append(p.Publishing, PublishedTrack{Kind: up.Kind().String(), Source: source, RID: up.RID(),
				Packets: c.Packets.Load(), Bytes: c.Bytes.Load(), BitrateBps: up.Bitrate(now), Width: w, Height: h,
				Keyframes: c.Keyframes.Load(), KeyframeRequests: c.KeyframeRequests.Load(), NACKs: c.NACKs.Load(),
				Retransmissions: c.Retransmissions.Load(), Malformed: c.Malformed.Load()})
		}
		seen := map[*forward.DownTrack]bool{}
		for _, d := range m.downs {
			if seen[d] {
				continue
			}
			seen[d] = true
			st.Totals.addDown(d)
			c := d.Counters()
			p.Receiving++
			p.PacketsOut += c.Packets
			p.BytesOut += c.Bytes
			if !d.Bypassed() && (d.Kind() == webrtc.RTPCodecTypeAudio || d.Selected()) {
				st.Forwarding[d.Kind().String()]++
			}
		}
		for i, d := range m.slots.tracks { // its audio slots (audioslots.go)
			st.Totals.addDown(d)
			c := d.Counters()
			p.Receiving++
			p.PacketsOut += c.Packets
			p.BytesOut += c.Bytes
			if m.slots.ups[i] != nil {
				st.Forwarding[webrtc.RTPCodecTypeAudio.String()]++
			}
		}
		var linkStats *forward.LinkStats
		if l := m.m.Link(); l != nil {
			ls := l.Stats()
			linkStats = &ls
			e := ls.Estimator
			p.Downlink = &DownlinkStats{Stats: m.downlinkStats(l, map[string]signal.VideoStats{}), DelayBased: e.DelayBased, LossBased: e.LossBased,
				Acked: e.Acked, LossFraction: e.LossFraction, RTTMS: float64(e.RTT) / 1e6, ProbeClusters: e.Probes,
				ProbeWins: e.ProbeWins, LastProbe: e.LastProbe, ProbeTarget: ls.ProbeTarget, Overuses: e.Overuses, Usage: e.Usage.String(),
				ProbeBytes: ls.ProbeBytes, Feedbacks: ls.Feedbacks, Retransmits: ls.Retransmits,
				RetransmitsDropped: ls.RetransmitsDropped, NACKsSkipped: ls.RetransmitsSkipped, Resyncs: ls.Resyncs, ResyncsHeld: ls.ResyncsHeld,
				PlayoutDelayMS: float64(ls.PlayoutDelay) / 1e6,
				QueueMS:        float64(e.Queue) / 1e6, Competing: e.Competing, CompeteEntries: e.CompeteEntries,
				BreakCeilings: m.bw.heldCeilings(), SwitchEvents: append([]SwitchEvent{}, m.bw.events...)}
		}
		st.Totals.Bandwidth.add(m, linkStats)
		st.Participants = append(st.Participants, p)
	}
	return st
}
