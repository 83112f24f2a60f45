package load

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// A small meeting over real ICE/DTLS/SRTP: three simulcast publishers showing
// each other at 360p get each other's audio and video, the SFU trims the
// senders to the layer in use, and the per-second figures say so.
func TestMeetingAgainstServer(t *testing.T) {
	url, _ := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{URL: url, Room: "meeting", Seed: 1, Speech: SpeechRealistic,
		// Display names with a space: they must not reach the publish SDP's msid.
		Participants: Group("Ada m", 3, ParticipantSpec{Audio: true, Video: VideoSimulcast, View: View{Width: 640, Height: 360}})}
	r := startJoined(ctx, t, cfg)
	// Each receives 2 audio and 2 video streams.
	deadline := time.Now().Add(15 * time.Second)
	for {
		tot := r.Totals()
		if tot.RxAudioStreams == 6 && tot.RxVideoStreams == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiving %d audio and %d video streams, want 6 and 6 (last error %q)", tot.RxAudioStreams, tot.RxVideoStreams, r.LastError())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The SFU asks every sender for q and h only (layers; unneeded encodings go
	// off after 5 s; under bandwidth adaptation the encodings below the one a
	// receiver shows stay on), and the senders follow.
	deadline = time.Now().Add(20 * time.Second)
	for _, p := range r.parts {
		for {
			done := make(chan []string, 1)
			p.snd.post(func(src *source) { done <- src.activeRIDs() })
			rids := <-done
			if len(rids) == 2 && rids[0] == "q" && rids[1] == "h" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s sends %v, want [q h]", p.spec.Name, rids)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// What each receives is what the scenario expects: the others' audio and
	// their video in the 360p encoding (the receivers' congestion feedback lets
	// the SFU's estimate climb past the 1 Mb/s it starts at). Under the race
	// detector on a busy machine the estimate may not get there: any simulcast
	// encoding of the right streams will do.
	sc := Scenario{Participants: cfg.Participants}
	want := map[Reception]bool{}
	for _, e := range sc.Expected() {
		want[Reception{Receiver: e.Receiver, Source: e.Source, Kind: e.Kind, Height: e.Height}] = true
	}
	if len(want) != 12 {
		t.Fatalf("%d expectations, want 12", len(want))
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		got := map[Reception]bool{}
		for _, rec := range r.Receptions() {
			if raceEnabled && rec.Kind == "video" && (rec.Height == 180 || rec.Height == 720) {
				rec.Height = 360
			}
			rec.Packets, rec.Bytes, rec.Expected, rec.Received = 0, 0, 0, 0 // who receives what, not how much
			got[rec] = true
		}
		if maps.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiving %v, want %v", r.Receptions(), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	a := r.Totals()
	time.Sleep(3 * time.Second)
	b := r.Totals()
	w := Between(r.Started(), a, b)
	t.Logf("\n%s\n%s\n%s", Header(), w.Line(), w.Summary())
	// Six 360p streams at 30 fps and 300 audio packets/s; the lower bounds are
	// loose, for a busy machine under -race: this checks behaviour, not capacity.
	if w.RxFramesPerS < 6*15 || w.RxFramesPerS > 6*33 {
		t.Errorf("receiving %.0f video frames/s, want about 180", w.RxFramesPerS)
	}
	if w.RxAudioPacketsPerS < 6*25 || w.RxAudioPacketsPerS > 6*55 {
		t.Errorf("receiving %.0f audio packets/s, want about 300", w.RxAudioPacketsPerS)
	}
	// 360p is 500 kb/s: six of them plus audio, well below the three layers.
	if w.RxKbps < 1500 || w.RxKbps > 4500 {
		t.Errorf("receiving %.0f kb/s, want about 3200", w.RxKbps)
	}
	if w.TxKbps > 3*700 {
		t.Errorf("sending %.0f kb/s: the senders did not drop the unused layers", w.TxKbps)
	}
	if w.LossPercent > 5 {
		t.Errorf("loss %.2f%% on loopback", w.LossPercent)
	}
	if w.AudioLatencyP50 <= 0 {
		t.Errorf("no audio latency measured")
	}
}

// The load survives the server restarting: every participant rejoins the new
// server and media flows again.
func TestSurvivesServerRestart(t *testing.T) {
	url, stop := startServer(t, nil)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/ws")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := Start(ctx, Config{URL: url, Room: "restart", Seed: 2, Speech: SpeechPaper,
		Participants: Group("p", 2, ParticipantSpec{Audio: true, Video: VideoSingle})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitStreams := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			tot := r.Totals()
			if tot.Connected == 2 && tot.RxVideoStreams == 2 && tot.RxAudioStreams == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d connected, receiving %d audio and %d video streams (last error %q)", what, tot.Connected, tot.RxAudioStreams, tot.RxVideoStreams, r.LastError())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitStreams("before the restart")
	stop()
	startServer(t, func(c *config.Config) { c.HTTP = addr })
	deadline := time.Now().Add(30 * time.Second)
	for r.Totals().Reconnects < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d reconnects after the restart, want one per participant (last error %q)", r.Totals().Reconnects, r.LastError())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(activeWindow) // streams of the old server no longer count as active
	waitStreams("after the restart")
}

// startJoined starts cfg's participants and waits until all have joined; the
// run is closed when the test ends.
func startJoined(ctx context.Context, t *testing.T, cfg Config) *Run {
	t.Helper()
	r, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if err := r.WaitJoined(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}
