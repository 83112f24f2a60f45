package e2e

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// slotAudio is what a page plays on its audio slots: by participant whose
// tile plays a slot's track, the pitch heard on it (Hz; 0: silence).
type slotAudio map[string]float64

// slotPitchScript measures, for every tile playing an audio slot's track,
// the strongest frequency between 100 and 1000 Hz over 600 ms (WebAudio,
// 5.9 Hz bins).
const slotPitchScript = `(async () => {
	const out = {};
	const tiles = Array.from(document.querySelectorAll('.tile[data-participant-id]:not(.local)'));
	const ctx = new AudioContext({sampleRate: 48000});
	await ctx.resume();
	const jobs = tiles.map(async (tile) => {
		const a = tile.querySelector('audio');
		const s = a && a.srcObject;
		const tr = s && s.getAudioTracks()[0];
		if (!tr || !tr.id.startsWith('audio-slot-')) return;
		const an = ctx.createAnalyser();
		an.fftSize = 8192;
		an.smoothingTimeConstant = 0;
		ctx.createMediaStreamSource(new MediaStream([tr])).connect(an);
		const bins = new Float32Array(an.frequencyBinCount);
		const sum = new Float32Array(an.frequencyBinCount);
		for (let i = 0; i < 6; i++) {
			await new Promise((r) => setTimeout(r, 100));
			an.getFloatFrequencyData(bins);
			for (let k = 0; k < bins.length; k++) sum[k] += Math.pow(10, bins[k] / 20);
		}
		const hz = ctx.sampleRate / an.fftSize;
		let best = 0, bestK = 0;
		for (let k = Math.floor(100 / hz); k < 1000 / hz; k++) if (sum[k] > best) { best = sum[k]; bestK = k; }
		out[tile.dataset.participantId] = best / 6 > 0.001 ? bestK * hz : 0;
	});
	await Promise.all(jobs);
	await ctx.close();
	return out;
})()`

func (b *Browser) slotAudio() (slotAudio, error) {
	var out slotAudio
	err := b.eval(slotPitchScript, &out)
	return out, err
}

// speakingTile is the participant whose tile has the speaking outline ("" for none).
func (b *Browser) speakingTile() string {
	var id string
	_ = b.eval(`(() => { const t = document.querySelector('.tile.speaking:not(.local)'); return t ? t.dataset.participantId : ''; })()`, &id)
	return id
}

// TestAudioSlotsCarryTheSpeaker (issue 16, audio selection): with one audio
// slot per receiver, Dan (who only listens) hears exactly one voice, the
// speaker's: Ann's (150 Hz) while she talks, then Bob's (210 Hz) once he
// takes over, on the same slot track, which his tile then plays — and the
// speaking outline is on the tile whose voice is heard. Cat (270 Hz) stays
// silent and is never played.
func TestAudioSlotsCarryTheSpeaker(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) { c.AudioSlots = 1 })
	base := srv.URL() + "e2e-slots?video=320x180&name="
	voices := map[string]float64{"Ann": 150, "Bob": 210, "Cat": 270, "Dan": 330}
	ids := map[string]string{}
	browsers := map[string]*Browser{}
	for i, name := range []string{"Ann", "Bob", "Cat", "Dan"} {
		b := launch(t, name, camera(t, palette[i], 320, 180), autoplay)
		b.withVoice(name == "Ann", voices[name])
		ids[name] = b.join(base, name)
		browsers[name] = b
	}
	dan := browsers["Dan"]
	byID := map[string]string{}
	for n, id := range ids {
		byID[id] = n
	}
	// hears: Dan plays exactly one slot, on want's tile, in want's voice, and
	// outlines want as the speaker.
	hears := func(want string) func() (bool, string) {
		return func() (bool, string) {
			got, err := dan.slotAudio()
			if err != nil {
				return false, err.Error()
			}
			var parts []string
			for id, hz := range got {
				parts = append(parts, fmt.Sprintf("%s's tile plays a slot at %.0f Hz", byID[id], hz))
			}
			speaking := byID[dan.speakingTile()]
			desc := strings.Join(parts, "; ") + "; speaking outline on " + speaking
			hz, ok := got[ids[want]]
			return len(got) == 1 && ok && math.Abs(hz-voices[want]) < 12 && speaking == want, desc
		}
	}
	took := within(t, "Dan hears Ann on his slot", 20*time.Second, hears("Ann"))
	t.Logf("Dan hears Ann (150 Hz) on his one slot %v after the joins", took.Round(time.Millisecond))
	checkRED(t, browsers["Ann"], dan)

	browsers["Ann"].speak(false)
	browsers["Bob"].speak(true)
	took = within(t, "Dan's slot follows the speaker to Bob", 15*time.Second, hears("Bob"))
	t.Logf("Dan's slot carries Bob (210 Hz), on Bob's tile, %v after the microphones switched", took.Round(time.Millisecond))
}

// audioPayloads is a page's audio RTP: received (inbound-rtp, all streams)
// or sent (outbound-rtp), payload bytes and packets, and the codecs getStats
// names for them; negotiated: its answer to the SFU's subscribe offer
// accepts RED for Opus.
type audioPayloads struct {
	Bytes, Packets float64
	Codecs         []string
	Negotiated     bool
}

func (b *Browser) audioPayloads(dir string) (audioPayloads, error) {
	var out audioPayloads
	err := b.eval(`(async () => {
		const out = {bytes: 0, packets: 0, codecs: [], negotiated: false};
		for (const pc of window.__podiumTest.pcs) {
			if (pc.connectionState === 'closed') continue;
			if (pc.remoteDescription && pc.remoteDescription.type === 'offer' && pc.localDescription &&
				/a=rtpmap:\d+ red\/48000\/2/i.test(pc.localDescription.sdp)) out.negotiated = true;
			const stats = await pc.getStats();
			stats.forEach(r => {
				if (r.type !== '`+dir+`' || r.kind !== 'audio') return;
				out.bytes += (r.bytesReceived || r.bytesSent || 0);
				out.packets += (r.packetsReceived || r.packetsSent || 0);
				const c = r.codecId && stats.get(r.codecId);
				if (c) out.codecs.push(c.mimeType);
			});
		}
		return out;
	})()`, &out)
	return out, err
}

// checkRED (issue 22): the receiver's answer accepted RED, and what it
// receives is RED — each packet Ann's Opus payload with the two before it,
// about three times hers per packet — which it decodes: the caller heard
// her voice on the slot.
func checkRED(t *testing.T, sender, receiver *Browser) {
	t.Helper()
	var detail string
	within(t, "the receiver gets RED: three Opus payloads a packet", 15*time.Second, func() (bool, string) {
		sent, err := sender.audioPayloads("outbound-rtp")
		if err != nil {
			return false, err.Error()
		}
		got, err := receiver.audioPayloads("inbound-rtp")
		if err != nil {
			return false, err.Error()
		}
		if sent.Packets == 0 || got.Packets == 0 {
			return false, "no audio yet"
		}
		in, out := got.Bytes/got.Packets, sent.Bytes/sent.Packets
		detail = fmt.Sprintf("answer accepts RED: %v; receiver %.0f payload bytes a packet (getStats codecs %v), sender %.0f (%v)",
			got.Negotiated, in, got.Codecs, out, sent.Codecs)
		return got.Negotiated && in > 2.5*out, detail
	})
	t.Logf("RED: %s", detail)
}
