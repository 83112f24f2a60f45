package load

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/config"
)

// rtcpCapture is an RTCP writer that keeps what it is given.
type rtcpCapture struct{ pkts []rtcp.Packet }

func (c *rtcpCapture) Write(pkts []rtcp.Packet, _ interceptor.Attributes) (int, error) {
	c.pkts = append(c.pkts, pkts...)
	return len(pkts), nil
}

// srtpLike is an RTP packet as it arrives SRTP-protected: a clear header
// with the transport-wide sequence number (extension id 3), then bytes that
// stand for the encrypted payload and the tag.
func srtpLike(ssrc uint32, pt uint8, seq, twseq uint16) []byte {
	b := make([]byte, 12+8+40)
	b[0] = 0x90 // version 2, extension
	b[1] = pt
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	binary.BigEndian.PutUint16(b[12:], 0xBEDE)
	binary.BigEndian.PutUint16(b[14:], 1)
	b[16] = 3<<4 | 1 // id 3, two bytes
	binary.BigEndian.PutUint16(b[17:], twseq)
	for i := 20; i < len(b); i++ {
		b[i] = 0xA5
	}
	return b
}

// A light receiver counts loss from the clear headers, NACKs the gap with
// its next feedback (which carries transport-wide feedback too), counts the
// repair, gives up after three tries, and lets pion have everything but RTP.
func TestLightReceiverCountsLossAndNACKs(t *testing.T) {
	run := &Run{}
	l := newLightRx(newReceiver(run), 1)
	l.learn("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
		"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=extmap:3 " + "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n" +
		"a=ssrc:1000 msid:audio-slot-0 a0\r\n" +
		"m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ssrc:2000 msid:ada v0\r\n")
	w := &rtcpCapture{}
	l.setWriter(w)
	now := time.Unix(1000, 0)
	if l.take([]byte{0x16, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, now) {
		t.Fatal("a DTLS record was taken from pion")
	}
	tw := uint16(0)
	feed := func(ssrc uint32, pt uint8, seqs ...uint16) {
		for _, s := range seqs {
			tw++
			if !l.take(srtpLike(ssrc, pt, s, tw), now) {
				t.Fatalf("RTP %d/%d not taken", ssrc, s)
			}
			now = now.Add(20 * time.Millisecond)
		}
	}
	feed(1000, opusPT, 1, 2, 3, 6, 7) // 4 and 5 lost
	feed(2000, 96, 10, 11, 12)
	feed(3000, 96, 1, 2) // never announced: not counted
	if len(l.recv.tracks) != 2 {
		t.Fatalf("%d streams, want 2 (the unannounced SSRC is not counted)", len(l.recv.tracks))
	}
	var tot rxTotals
	for _, x := range l.recv.tracks {
		tot.add(x)
	}
	if tot.Expected != 10 || tot.Received != 8 || tot.AudioPackets != 5 || tot.VideoPackets != 3 {
		t.Fatalf("expected %d received %d audio %d video %d; want 10, 8, 5, 3", tot.Expected, tot.Received, tot.AudioPackets, tot.VideoPackets)
	}
	if heard := l.recv.slots.snapshot(); len(heard) != 0 {
		t.Fatalf("slot audio credited before audio-slots named anyone: %v", heard)
	}

	l.feedback(true, true)
	var nacked []uint16
	twccs := 0
	for _, p := range w.pkts {
		switch p := p.(type) {
		case *rtcp.TransportLayerNack:
			if p.MediaSSRC != 1000 {
				t.Fatalf("NACK for SSRC %d", p.MediaSSRC)
			}
			for _, pair := range p.Nacks {
				nacked = append(nacked, pair.PacketList()...)
			}
		case *rtcp.TransportLayerCC:
			twccs++
		}
	}
	if len(nacked) != 2 || nacked[0] != 4 || nacked[1] != 5 {
		t.Fatalf("NACKed %v, want [4 5]", nacked)
	}
	if twccs == 0 {
		t.Fatal("no transport-wide feedback")
	}

	feed(1000, opusPT, 4) // the repair of 4; 5 never comes
	for range 5 {
		w.pkts = nil
		l.feedback(true, true)
	}
	tot = rxTotals{}
	for _, x := range l.recv.tracks {
		tot.add(x)
	}
	if tot.Expected != 10 || tot.Received != 9 {
		t.Fatalf("after the repair: expected %d received %d, want 10 and 9", tot.Expected, tot.Received)
	}
	if s := l.streams[1000]; len(s.missing) != 0 {
		t.Fatalf("still NACKing %v after %d tries", s.missing, lightNACKTries)
	}
}

// Light receivers against a real server: two publishers, three light
// audience members playing audio slots. Each light receiver gets both
// publishers' video and their audio through its slots, from the clear
// headers alone, and sees no loss.
func TestLightReceiversAgainstServer(t *testing.T) {
	url, _ := startServer(t, func(c *config.Config) { c.AudioSlots = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{URL: url, Room: "light", Seed: 1, Speech: SpeechPaper, DTX: true, AudioSlots: true, Light: true,
		Participants: append(Group("pub", 2, ParticipantSpec{Audio: true, Video: VideoSimulcast, View: View{Width: 320, Height: 180}}),
			Group("rcv", 3, ParticipantSpec{View: View{Width: 320, Height: 180}})...)}
	r := startJoined(ctx, t, cfg)
	for _, p := range r.parts[2:] {
		if p.light == nil {
			t.Fatalf("%s receives through pion", p.spec.Name)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		video, slots := map[string]int{}, map[string]int{}
		for _, rec := range r.Receptions() {
			if _, ok := slotIndex(rec.Source); ok {
				slots[rec.Receiver]++
			} else if rec.Kind == "video" {
				video[rec.Receiver]++
			}
		}
		done := true
		for _, name := range []string{"rcv-1", "rcv-2", "rcv-3"} {
			done = done && video[name] == 2 && slots[name] >= 1
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("light receivers get video %v and audio slots %v; want 2 videos and a slot each (last error %q)", video, slots, r.LastError())
		}
		time.Sleep(200 * time.Millisecond)
	}
	before := r.Totals()
	time.Sleep(5 * time.Second)
	w := Between(r.Started(), before, r.Totals())
	t.Log(w.Summary())
	if w.LossPercent > 0.5 || w.RxVideoPacketsPerS == 0 || w.RxAudioPacketsPerS == 0 {
		t.Fatalf("loss %.2f %%, %.0f video and %.0f audio packets/s", w.LossPercent, w.RxVideoPacketsPerS, w.RxAudioPacketsPerS)
	}
	for _, h := range r.SlotAudio()[2:] {
		if len(h.Speakers) == 0 {
			t.Errorf("%s heard nobody through its slots", h.Receiver)
		}
	}
}
