package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing/fstest"
	"time"

	"github.com/podium-sfu/podium/internal/cascade"
	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/load"
	"github.com/podium-sfu/podium/internal/netem"
	"github.com/podium-sfu/podium/internal/server"
)

// relayOverhead is a relay datagram's bytes around the RTP packet: the
// 18-byte clear header, the 4-byte stream id and the 16-byte GCM tag.
const relayOverhead = 38

// rtpHeader is the RTP fixed header the load's payload counts leave out.
const rtpHeader = 12

// CascadeOptions configure `podium bench cascade`: one conference over
// several bridges of one cluster (all in this process, on loopback), the relay
// hop lossy, the relay traffic weighed against what Last N needs.
type CascadeOptions struct {
	Bridges      int
	Participants int // spread round-robin over the bridges
	LastN        int
	// TileHeight is the height of the grid tiles receivers show the others
	// in (16:9): 360 takes the middle encoding, 180 the lowest.
	TileHeight int
	Loss       float64 // random loss on every relay hop, 0..1
	// DTX: the participants' Opus sends almost nothing while they are
	// silent (fewer audio packets to forward and relay).
	DTX      bool
	Warmup   time.Duration
	Duration time.Duration
	// Margin is how far above what Last N needs the relay traffic may go
	// (retransmissions, feedback, sender reports, encodings overlapping a
	// switch): 0.15 is 15 %.
	Margin   float64
	Seed     uint64
	Progress io.Writer // a line per second while measuring (nil: none)
}

// CascadeResult are the figures of one run. Rates are kb/s on the relay's
// wire (datagram bytes).
type CascadeResult struct {
	Bridges, Participants, LastN int
	Window                       time.Duration

	RelayKbps  float64 // every datagram the bridges sent each other
	NeededKbps float64 // the streams receivers take from other bridges, once per bridge
	OctoKbps   float64 // every encoding of every source to every other bridge (Jitsi's Octo)

	PathLossPercent float64 // datagrams the emulated relay hops dropped
	PathLost        uint64
	// What receivers missed after repair, of the sequence numbers in the
	// window: video and audio relayed from other bridges, and all streams.
	RelayedVideo, RelayedAudio, All Loss
	RelayedStreams                  int // streams relayed between bridges at the window's end
	// Where relayed packets went missing, from the window's start to the
	// end of repairs: the subscribing bridges' repair of the relay hop by
	// kind, what the origins did with the NACKs, packets dropped between
	// the relay socket and a relayed track (full queue).
	AudioRepair, VideoRepair cascade.Repair
	Resends                  cascade.Resends
	QueueDrops               uint64
}

// Loss is receivers' sequence numbers expected and never received.
type Loss struct{ Expected, Missed uint64 }

// Percent is the share missed.
func (l Loss) Percent() float64 {
	if l.Expected == 0 {
		return 0
	}
	return 100 * float64(l.Missed) / float64(l.Expected)
}

func (l *Loss) add(expected, received uint64) {
	l.Expected += expected
	l.Missed += expected - min(expected, received)
}

// Line is the key=value figures.
func (r CascadeResult) Line() string {
	return fmt.Sprintf("bridges=%d participants=%d last_n=%d window_s=%.0f relay_kbps=%.0f needed_kbps=%.0f octo_kbps=%.0f "+
		"relay_over_needed=%.3f octo_over_relay=%.1f path_loss_pct=%.2f path_lost=%d relayed_video_expected=%d relayed_video_missed=%d "+
		"relayed_audio_expected=%d relayed_audio_missed=%d relayed_audio_loss_pct=%.2f all_expected=%d all_missed=%d relayed_streams=%d",
		r.Bridges, r.Participants, r.LastN, r.Window.Seconds(), r.RelayKbps, r.NeededKbps, r.OctoKbps,
		ratio(r.RelayKbps, r.NeededKbps), ratio(r.OctoKbps, r.RelayKbps), r.PathLossPercent, r.PathLost,
		r.RelayedVideo.Expected, r.RelayedVideo.Missed, r.RelayedAudio.Expected, r.RelayedAudio.Missed, r.RelayedAudio.Percent(),
		r.All.Expected, r.All.Missed, r.RelayedStreams) +
		" " + repairFields("audio", r.AudioRepair) + " " + repairFields("video", r.VideoRepair) +
		fmt.Sprintf(" nack_asked=%d nack_one_rtt=%d nack_unsubscribed=%d nack_unavailable=%d resent_audio=%d video_late=%d queue_drops=%d",
			r.Resends.Asked, r.Resends.OneRTT, r.Resends.Unsubscribed, r.Resends.Unavailable, r.Resends.Audio, r.Resends.VideoLate, r.QueueDrops)
}

func repairFields(kind string, r cascade.Repair) string {
	return fmt.Sprintf("%[1]s_hop_lost=%[2]d %[1]s_repaired=%[3]d %[1]s_gave_up=%[4]d %[1]s_aged=%[5]d %[1]s_ended=%[6]d %[1]s_outage=%[7]d",
		kind, r.Lost, r.Repaired, r.GaveUp, r.Aged, r.Ended, r.Outage)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Cascade runs the scenario and checks it: receivers lose nothing after
// repair, and the relay carries no more than what Last N needs plus the
// margin. The result is filled in even when the check fails.
func Cascade(ctx context.Context, o CascadeOptions) (CascadeResult, error) {
	res := CascadeResult{Bridges: o.Bridges, Participants: o.Participants, LastN: o.LastN}
	if o.TileHeight == 0 {
		o.TileHeight = 360
	}
	if o.Bridges < 2 || o.Participants < o.Bridges {
		return res, errors.New("bench cascade: at least 2 bridges and a participant on each")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	regions := make([]string, o.Bridges)
	for i := range regions {
		regions[i] = fmt.Sprintf("r%d", i)
	}
	nodes, stop, err := startBridges(ctx, regions, o.LastN)
	defer stop()
	if err != nil {
		return res, err
	}
	// Every relay datagram to node i crosses paths[i]: one lossy hop each.
	paths := make([]*netem.Relay, len(nodes))
	for i, n := range nodes {
		target := n.Relay().Addr()
		if target.Addr().IsUnspecified() {
			target = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), target.Port())
		}
		p, err := netem.StartRelay(netem.RelayConfig{Listen: "127.0.0.1:0", Target: target.String(), Seed: int64(o.Seed) + int64(i)})
		if err != nil {
			return res, err
		}
		defer p.Close()
		paths[i] = p
		n.Cascade().SetAddr(p.Addr().AddrPort())
	}

	specs := make([]load.ParticipantSpec, o.Participants)
	bridgeOf := map[string]int{}
	for i := range specs {
		b := i % len(nodes)
		name := fmt.Sprintf("p%02d", i)
		specs[i] = load.ParticipantSpec{Name: name, Audio: true, Video: load.VideoSimulcast,
			View: load.View{Width: o.TileHeight * 16 / 9, Height: o.TileHeight, Role: "thumbnail"},
			URL:  "ws" + strings.TrimPrefix(nodes[b].URL(), "http") + fmt.Sprintf("ws?bridge=node%d", b)}
		bridgeOf[name] = b
	}
	run, err := load.Start(ctx, load.Config{URL: specs[0].URL, Room: "cascade", Participants: specs,
		Speech: load.SpeechRealistic, DTX: o.DTX, Seed: o.Seed, JoinInterval: 60 * time.Millisecond})
	if err != nil {
		return res, err
	}
	defer run.Close()
	jctx, jcancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(o.Participants)*time.Second)
	err = run.WaitJoined(jctx)
	jcancel()
	if err != nil {
		return res, err
	}
	if err := sleepCtx(ctx, o.Warmup); err != nil {
		return res, err
	}

	// The window: loss on from its start to its end; then, lossless, a
	// second for repairs in flight, so that a packet counts as missed only if
	// repair failed.
	setLoss := func(loss float64) error {
		for _, p := range paths {
			if err := p.SetLinks(netem.Config{Loss: loss}, netem.Config{}); err != nil {
				return err
			}
		}
		return nil
	}
	t0, rx0, relay0, path0, cs0 := run.Totals(), run.Streams(), relaySent(nodes), pathStats(paths), cascadeStats(nodes)
	if err := setLoss(o.Loss); err != nil {
		return res, err
	}
	start := time.Now()
	for time.Since(start) < o.Duration {
		before := relaySent(nodes)
		if err := sleepCtx(ctx, min(time.Second, o.Duration-time.Since(start))); err != nil {
			return res, err
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%4.0fs relay %.0f kb/s\n", time.Since(start).Seconds(), float64(relaySent(nodes)-before)*8/1000)
		}
	}
	t1, rx1, relay1, path1 := run.Totals(), run.Streams(), relaySent(nodes), pathStats(paths)
	res.Window = t1.At.Sub(t0.At)
	_ = setLoss(0)
	if err := sleepCtx(ctx, time.Second); err != nil {
		return res, err
	}
	rx2, cs2 := run.Streams(), cascadeStats(nodes)
	res.RelayedStreams = cs2.RelayedOut
	res.AudioRepair, res.VideoRepair = repairSince(cs0.AudioRepair, cs2.AudioRepair), repairSince(cs0.VideoRepair, cs2.VideoRepair)
	res.Resends = cascade.Resends{Asked: cs2.Resends.Asked - cs0.Resends.Asked, OneRTT: cs2.Resends.OneRTT - cs0.Resends.OneRTT,
		Unsubscribed: cs2.Resends.Unsubscribed - cs0.Resends.Unsubscribed, Unavailable: cs2.Resends.Unavailable - cs0.Resends.Unavailable,
		Audio: cs2.Resends.Audio - cs0.Resends.Audio, VideoLate: cs2.Resends.VideoLate - cs0.Resends.VideoLate}
	res.QueueDrops = cs2.QueueDrops - cs0.QueueDrops

	sec := res.Window.Seconds()
	res.RelayKbps = float64(relay1-relay0) * 8 / 1000 / sec
	res.NeededKbps = float64(neededBytes(rx0, rx1, bridgeOf)) * 8 / 1000 / sec
	octo, err := octoBytesPerS(t0, t1, o.Participants, len(nodes))
	if err != nil {
		return res, err
	}
	res.OctoKbps = octo * 8 / 1000
	res.PathLost = uint64(path1.Lost - path0.Lost)
	if total := path1.Lost - path0.Lost + path1.Delivered - path0.Delivered; total > 0 {
		res.PathLossPercent = 100 * float64(res.PathLost) / float64(total)
	}
	res.RelayedVideo, res.RelayedAudio, res.All = lossAfterRepair(rx0, rx2, bridgeOf)

	switch {
	case res.NeededKbps == 0:
		return res, errors.New("bench cascade: no receiver took anything from another bridge")
	case o.Loss > 0 && res.PathLost == 0:
		return res, errors.New("bench cascade: the relay hops lost nothing: loss not applied")
	case res.RelayedVideo.Expected == 0:
		return res, errors.New("bench cascade: no video relayed")
	case res.RelayedAudio.Expected == 0:
		return res, errors.New("bench cascade: no audio relayed")
	case res.RelayedVideo.Missed > 0 || res.RelayedAudio.Missed > 0:
		return res, fmt.Errorf("bench cascade: receivers missed %d of %d relayed video and %d of %d relayed audio packets after repair",
			res.RelayedVideo.Missed, res.RelayedVideo.Expected, res.RelayedAudio.Missed, res.RelayedAudio.Expected)
	case res.RelayKbps > res.NeededKbps*(1+o.Margin):
		return res, fmt.Errorf("bench cascade: the relay carried %.0f kb/s, more than the %.0f kb/s Last N needs + %.0f %%",
			res.RelayKbps, res.NeededKbps, 100*o.Margin)
	}
	return res, nil
}

// neededBytes is what Last N needs between bridges over the window: for each
// bridge, each stream (source and kind) of another bridge that some receiver
// there took, once, at the largest amount any of them received, plus the
// relay's overhead per packet. (Two receivers on one bridge taking different
// encodings of a source count as one: the figure errs low, the check strict.)
func neededBytes(before, after []load.Reception, bridgeOf map[string]int) uint64 {
	type key struct {
		recv, src, kind string
	}
	was := map[key]load.Reception{}
	for _, r := range before {
		was[key{r.Receiver, r.Source, r.Kind}] = r
	}
	type stream struct {
		bridge    int
		src, kind string
	}
	most := map[stream]uint64{}
	for _, r := range after {
		rb, ok1 := bridgeOf[r.Receiver]
		sb, ok2 := bridgeOf[r.Source]
		if !ok1 || !ok2 || rb == sb {
			continue
		}
		b := was[key{r.Receiver, r.Source, r.Kind}]
		n := (r.Bytes - min(r.Bytes, b.Bytes)) + relayOverhead*(r.Packets-min(r.Packets, b.Packets))
		s := stream{rb, r.Source, r.Kind}
		most[s] = max(most[s], n)
	}
	var sum uint64
	for _, n := range most {
		sum += n
	}
	return sum
}

// lossAfterRepair is what receivers missed between two listings of their
// streams: relayed video, relayed audio, everything.
func lossAfterRepair(before, after []load.Reception, bridgeOf map[string]int) (video, audio, all Loss) {
	type key struct{ recv, src, kind string }
	was := map[key]load.Reception{}
	for _, r := range before {
		was[key{r.Receiver, r.Source, r.Kind}] = r
	}
	for _, r := range after {
		b := was[key{r.Receiver, r.Source, r.Kind}]
		exp, rec := r.Expected-min(r.Expected, b.Expected), r.Received-min(r.Received, b.Received)
		all.add(exp, rec)
		rb, ok1 := bridgeOf[r.Receiver]
		sb, ok2 := bridgeOf[r.Source]
		if !ok1 || !ok2 || rb == sb {
			continue
		}
		if r.Kind == "video" {
			video.add(exp, rec)
		} else {
			audio.add(exp, rec)
		}
	}
	return video, audio, all
}

// octoBytesPerS is the relay traffic of Jitsi's Octo for the same conference:
// every bridge sends every other bridge every source's audio and all its
// simulcast encodings, whether anyone there watches them or not. Audio is as
// the participants sent it; video at the clips' nominal rates (publishers
// nobody watches are paused here, not in Octo), packetised like the video sent.
func octoBytesPerS(a, b load.Totals, participants, bridges int) (float64, error) {
	sec := b.At.Sub(a.At).Seconds()
	audio := float64(b.TxAudioBytes-a.TxAudioBytes+(rtpHeader+relayOverhead)*(b.TxAudioPackets-a.TxAudioPackets)) / sec
	var video float64
	for _, name := range []string{clip.Video180p, clip.Video360p, clip.Video720p} {
		v, err := clip.LoadVideo(name)
		if err != nil {
			return 0, err
		}
		video += float64(v.Bitrate()) / 8
	}
	payload := 1100.0
	if n := b.TxVideoPackets - a.TxVideoPackets; n > 0 {
		payload = float64(b.TxVideoBytes-a.TxVideoBytes) / float64(n)
	}
	video *= float64(participants) * (1 + (rtpHeader+relayOverhead)/payload)
	return float64(bridges-1) * (audio + video), nil
}

// cascadeStats sums the bridges' cascade counters.
func cascadeStats(nodes []*server.Server) (sum cascade.Stats) {
	for _, n := range nodes {
		st := n.Cascade().Stats()
		sum.RelayedOut += st.RelayedOut
		sum.QueueDrops += st.QueueDrops
		sum.AudioRepair = addRepair(sum.AudioRepair, st.AudioRepair)
		sum.VideoRepair = addRepair(sum.VideoRepair, st.VideoRepair)
		r := &sum.Resends
		r.Asked += st.Resends.Asked
		r.OneRTT += st.Resends.OneRTT
		r.Unsubscribed += st.Resends.Unsubscribed
		r.Unavailable += st.Resends.Unavailable
		r.Audio += st.Resends.Audio
		r.VideoLate += st.Resends.VideoLate
	}
	return sum
}

func addRepair(a, b cascade.Repair) cascade.Repair {
	return cascade.Repair{Lost: a.Lost + b.Lost, Repaired: a.Repaired + b.Repaired, GaveUp: a.GaveUp + b.GaveUp,
		Aged: a.Aged + b.Aged, Ended: a.Ended + b.Ended, Outage: a.Outage + b.Outage}
}

func repairSince(a, b cascade.Repair) cascade.Repair {
	return cascade.Repair{Lost: b.Lost - a.Lost, Repaired: b.Repaired - a.Repaired, GaveUp: b.GaveUp - a.GaveUp,
		Aged: b.Aged - a.Aged, Ended: b.Ended - a.Ended, Outage: b.Outage - a.Outage}
}

func relaySent(nodes []*server.Server) (n uint64) {
	for _, s := range nodes {
		n += s.Relay().Stats().SentBytes.Load()
	}
	return n
}

func pathStats(paths []*netem.Relay) (st netem.Stats) {
	for _, p := range paths {
		up := p.Stats().Up
		st.Lost += up.Lost
		st.Delivered += up.Delivered
	}
	return st
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// startBridges starts a bridge per region in this process, node0, node1, …:
// clustered over loopback routes, the relay on, Last N set, limits off (many
// joins from one address). stop stops them and waits.
func startBridges(ctx context.Context, regions []string, lastN int) (nodes []*server.Server, stop func(), err error) {
	var routes, peers []string
	for range regions {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, func() {}, err
		}
		routes = append(routes, ln.Addr().String())
		peers = append(peers, "nats://"+ln.Addr().String())
		_ = ln.Close()
	}
	sctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	stop = func() {
		cancel()
		for _, d := range done {
			<-d
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, region := range regions {
		port, err := freeUDPPort()
		if err != nil {
			return nodes, stop, err
		}
		cfg := config.Default()
		cfg.HTTP, cfg.UDPPort, cfg.TCPPort, cfg.MediaIPs = "127.0.0.1:0", 0, 0, []string{"127.0.0.1"}
		cfg.JoinsPerIP, cfg.MaxParticipants, cfg.SignalingRate, cfg.MaxConnsPerIP = 0, 0, 0, 0
		cfg.Region, cfg.ClusterListen, cfg.ClusterPeers, cfg.RelayPort = region, routes[i], peers, port
		cfg.LastN = lastN
		srv, err := server.New(cfg, server.Options{
			Client: fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>podium bench</title>")}},
			NodeID: fmt.Sprintf("node%d", i), ClusterHeartbeat: 200 * time.Millisecond, ClusterTTL: 1500 * time.Millisecond,
		}, log)
		if err != nil {
			return nodes, stop, err
		}
		d := make(chan error, 1)
		go func() { d <- srv.Serve(sctx) }()
		done = append(done, d)
		nodes = append(nodes, srv)
	}
	deadline := time.After(60 * time.Second)
	for _, s := range nodes {
		select {
		case <-s.Node().Ready():
		case <-deadline:
			return nodes, stop, errors.New("bench cascade: the cluster's JetStream is not ready after 60 s")
		case <-ctx.Done():
			return nodes, stop, ctx.Err()
		}
	}
	for {
		healthy := true
		for _, s := range nodes {
			healthy = healthy && s.Node().HealthyNodes(time.Now()) == len(nodes)
		}
		if healthy {
			return nodes, stop, nil
		}
		select {
		case <-deadline:
			return nodes, stop, errors.New("bench cascade: the registries do not list every node after 60 s")
		case <-ctx.Done():
			return nodes, stop, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}
