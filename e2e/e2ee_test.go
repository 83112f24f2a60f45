package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// heard is the loudest audioLevel b's page reported for each participant
// over a few samples (speech from withMicrophone(true) reaches > 0.1; frames
// dropped undecrypted leave only concealment, ~0).
func heard(b *Browser, samples int) (map[string]float64, error) {
	out := map[string]float64{}
	for i := 0; i < samples; i++ {
		rows, err := b.inboundAudio()
		if err != nil {
			return nil, err
		}
		for id, l := range rows {
			out[id] = max(out[id], l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out, nil
}

func (b *Browser) inboundAudio() (map[string]float64, error) {
	var rows []struct {
		ParticipantID string  `json:"participantId"`
		Kind          string  `json:"kind"`
		AudioLevel    float64 `json:"audioLevel"`
	}
	err := b.eval(`window.podium ? window.podium.stats().then(s => s.inbound) : []`, &rows)
	out := map[string]float64{}
	for _, r := range rows {
		if r.Kind == "audio" {
			out[r.ParticipantID] = r.AudioLevel
		}
	}
	return out, err
}

// e2eeState is what a page shows of end-to-end encryption.
type e2eeState struct {
	Lock          bool     `json:"lock"`
	CannotDecrypt []string `json:"cannotDecrypt"` // tiles saying so
	Notes         []string `json:"notes"`         // their visible notes' text
}

func (b *Browser) e2ee() (e2eeState, error) {
	var s e2eeState
	err := b.eval(`(() => {
		const lock = document.querySelector('.e2ee-lock');
		const tiles = [...document.querySelectorAll('.tile.cannot-decrypt[data-participant-id]')];
		return {lock: !!lock && !lock.hidden,
			cannotDecrypt: tiles.map(t => t.dataset.participantId),
			notes: tiles.map(t => { const n = t.querySelector('.decrypt-note'); return n && !n.hidden ? n.textContent : ''; })};
	})()`, &s)
	return s, err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// cannotDecrypt: b's tiles of every participant in ids say they cannot be
// decrypted, b shows none of their colours, and their video still arrives
// (so it is the encryption that keeps the picture away, not a missing stream).
func cannotDecrypt(b *Browser, ps ...who) func() (bool, string) {
	return func() (bool, string) {
		s, err := b.e2ee()
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if !contains(s.CannotDecrypt, p.ID) {
				return false, fmt.Sprintf("%s: %s's tile does not say it cannot decrypt (%+v)", b.name, p, s)
			}
		}
		for _, n := range s.Notes {
			if !strings.Contains(n, "Cannot decrypt") {
				return false, fmt.Sprintf("%s: note %q", b.name, n)
			}
		}
		return true, ""
	}
}

// showsNoneOf fails the test if any of b's tiles shows one of ps's colours, sampled
// for d.
func showsNoneOf(t *testing.T, b *Browser, d time.Duration, ps ...who) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(150 * time.Millisecond) {
		got, err := b.tileColours()
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		for id, s := range got {
			c, dist := nearest(s.R, s.G, s.B)
			for _, p := range ps {
				if p.ID == id || c == p.Colour && dist <= maxColourDistance {
					t.Fatalf("%s shows a picture in %s's tile (rgb %.0f,%.0f,%.0f, nearest %s): it cannot have the key", b.name, id, s.R, s.G, s.B, c.Name)
				}
			}
		}
	}
}

// packetsFrom: b receives video packets of every p (the SFU forwards them).
func packetsFrom(b *Browser, ps ...who) func() (bool, string) {
	return func() (bool, string) {
		first, err := b.inbound()
		if err != nil {
			return false, err.Error()
		}
		time.Sleep(500 * time.Millisecond)
		second, err := b.inbound()
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			var before, after int
			for _, r := range first {
				if r.ParticipantID == p.ID && r.Kind == "video" {
					before = r.PacketsReceived
				}
			}
			for _, r := range second {
				if r.ParticipantID == p.ID && r.Kind == "video" {
					after = r.PacketsReceived
				}
			}
			if after <= before {
				return false, fmt.Sprintf("%s: no video packets of %s: %s", b.name, p, describe(second))
			}
		}
		return true, ""
	}
}

// hears: b's audio of every p carries speech (decrypted: undecryptable frames
// are dropped and leave silence).
func hears(b *Browser, ps ...who) func() (bool, string) {
	return func() (bool, string) {
		levels, err := heard(b, 10)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if levels[p.ID] < 0.05 {
				return false, fmt.Sprintf("%s: %s's audio level at most %.3f: %v", b.name, p, levels[p.ID], levels)
			}
		}
		return true, ""
	}
}

// End-to-end encryption through the SFU (docs/e2ee.md). Ann and Bob join with
// the same #e2ee= passphrase: they see each other's colour and hear each
// other's speech, and show the lock badge. Cid joins without one: his tiles of
// Ann and Bob say "cannot decrypt" and never show a picture while their
// packets arrive; Ann and Bob see Cid (he announced no encryption) and lose
// the lock. Cid's browser then joins again as Dee with a wrong passphrase:
// the same as Cid, and Ann and Bob cannot decrypt Dee either, while still
// seeing each other. Its browser joins once more as Eve with the passphrase
// typed in the pre-join form (not in her address) and leaves; then Ann presses "Rotate encryption key" in her Invite panel
// (whose link carries no passphrase): each time Ann's frames carry a newer key
// id within 2 s and Bob's video of her never stalls for 500 ms.
func TestE2EEThroughTheSFU(t *testing.T) {
	srv := startServer(t)
	base := srv.URL() + "e2e-e2ee?video=320x180&name="
	const secret = "#e2ee=correct%20horse%20battery"
	ann := who{Name: "Ann", Colour: red}
	bob := who{Name: "Bob", Colour: green}
	cid := who{Name: "Cid", Colour: blue}
	a := launch(t, "Ann", camera(t, red, 320, 180), autoplay)
	a.withMicrophone(true)
	b := launch(t, "Bob", camera(t, green, 320, 180), autoplay)
	b.withMicrophone(true)
	ann.ID = a.join(base, ann.Name+secret)
	bob.ID = b.join(base, bob.Name+secret)

	took := within(t, "Ann and Bob see each other's colour", 20*time.Second, func() (bool, string) {
		if ok, why := showsWho(a, bob); !ok {
			return false, why
		}
		return showsWho(b, ann)
	})
	t.Logf("Ann and Bob decode each other's encrypted video (after %v)", took.Round(time.Millisecond))
	within(t, "Ann and Bob hear each other", 10*time.Second, func() (bool, string) {
		if ok, why := hears(a, bob)(); !ok {
			return false, why
		}
		return hears(b, ann)()
	})
	within(t, "Ann and Bob show the lock", 3*time.Second, func() (bool, string) {
		sa, err1 := a.e2ee()
		sb, err2 := b.e2ee()
		return err1 == nil && err2 == nil && sa.Lock && sb.Lock && len(sa.CannotDecrypt)+len(sb.CannotDecrypt) == 0,
			fmt.Sprintf("Ann %+v %v, Bob %+v %v", sa, err1, sb, err2)
	})

	c := launch(t, "Cid", camera(t, blue, 320, 180), autoplay)
	c.withMicrophone(true)
	// What the SFU forwards from here on (Cid's joining brings keyframes) is
	// checked below.
	tapped := tapForwarded(t, ann.ID)
	cid.ID = c.join(base, cid.Name)
	tapped.add(cid.ID)
	within(t, "Cid's tiles of Ann and Bob say cannot decrypt", 5*time.Second, cannotDecrypt(c, ann, bob))
	within(t, "Cid receives Ann's and Bob's video packets", 10*time.Second, packetsFrom(c, ann, bob))
	showsNoneOf(t, c, 3*time.Second, ann, bob)
	within(t, "Ann and Bob see Cid (unencrypted) and each other, without the lock", 15*time.Second, func() (bool, string) {
		for _, x := range []*Browser{a, b} {
			s, err := x.e2ee()
			if err != nil || s.Lock {
				return false, fmt.Sprintf("%s: %+v %v", x.name, s, err)
			}
		}
		if ok, why := showsWho(a, bob, cid); !ok {
			return false, why
		}
		return showsWho(b, ann, cid)
	})
	t.Logf("Cid (no passphrase): both tiles say cannot decrypt, no picture of Ann or Bob over 3 s while their packets arrive")

	// The blind SFU: what it forwards of Ann (encrypted) does not decode, what it
	// forwards of Cid (not encrypted) does, checked alike.
	tapped.stop()
	dir := t.TempDir()
	plain := decodeForwarded(t, dir, tapped.of(cid.ID, webrtc.RTPCodecTypeVideo), cid)
	if plain.Frames < 30 || plain.Errors > 0 || plain.Matching*10 < plain.Pictures*9 || plain.Pictures < plain.Frames*9/10 {
		t.Fatalf("the SFU's forwarded VP8 of unencrypted Cid does not decode to Cid's picture: %s", plain.Detail)
	}
	sealed := decodeForwarded(t, dir, tapped.of(ann.ID, webrtc.RTPCodecTypeVideo), ann)
	if sealed.Frames < 30 || sealed.Matching > 0 || sealed.Errors == 0 && sealed.Pictures > 0 {
		t.Fatalf("the SFU's forwarded VP8 of encrypted Ann decodes: %s", sealed.Detail)
	}
	t.Logf("blind SFU, video: %s; %s", plain.Detail, sealed.Detail)
	annAudio, cidAudio := tapped.of(ann.ID, webrtc.RTPCodecTypeAudio), tapped.of(cid.ID, webrtc.RTPCodecTypeAudio)
	if len(annAudio) < 50 || len(cidAudio) < 50 || opusTOCShare(cidAudio) < 0.5 || opusTOCShare(annAudio) > 0.1 {
		t.Fatalf("blind SFU, audio: %d/%d packets of Ann/Cid, share of the commonest first byte (Opus TOC) Ann %.2f, Cid %.2f",
			len(annAudio), len(cidAudio), opusTOCShare(annAudio), opusTOCShare(cidAudio))
	}
	lo, hi, mean := trailerSizes(annAudio)
	t.Logf("blind SFU, audio: commonest first byte (Opus TOC) in %.0f %% of Cid's payloads, %.0f %% of Ann's; "+
		"e2ee adds %d-%d bytes (mean %.1f) to each of Ann's %d audio packets (tag 16 + KID, CTR, config)",
		100*opusTOCShare(cidAudio), 100*opusTOCShare(annAudio), lo, hi, mean, len(annAudio))

	// The same browser with a wrong passphrase, as Dee.
	dee := who{Name: "Dee", Colour: blue}
	dee.ID = c.join(base, dee.Name+"#e2ee=wrong%20horse")
	within(t, "Dee's tiles of Ann and Bob say cannot decrypt", 8*time.Second, cannotDecrypt(c, ann, bob))
	within(t, "Dee receives Ann's and Bob's video packets", 10*time.Second, packetsFrom(c, ann, bob))
	showsNoneOf(t, c, 3*time.Second, ann, bob)
	if levels, err := heard(c, 10); err != nil || levels[ann.ID] > 0.01 || levels[bob.ID] > 0.01 {
		t.Fatalf("Dee hears Ann or Bob with a wrong key: %v %v", levels, err)
	}
	within(t, "Ann and Bob cannot decrypt Dee, see each other, and show the lock", 8*time.Second, func() (bool, string) {
		for _, x := range []*Browser{a, b} {
			if ok, why := cannotDecrypt(x, dee)(); !ok {
				return false, why
			}
			if s, err := x.e2ee(); err != nil || !s.Lock {
				return false, fmt.Sprintf("%s: %+v %v", x.name, s, err)
			}
		}
		if ok, why := showsWho(a, bob); !ok {
			return false, why
		}
		return showsWho(b, ann)
	})
	showsNoneOf(t, a, time.Second, dee)
	t.Logf("Dee (wrong passphrase): both tiles say cannot decrypt, no picture or sound of Ann or Bob; Ann and Bob cannot decrypt Dee")

	// Key rotation when someone who had the key leaves: the same browser as Eve
	// with the passphrase, then closed. Ann's frames carry a new key id within
	// 2 s, and Bob's video of Ann does not stall for 500 ms over the change.
	// Eve types the passphrase in the pre-join form; it stays out of her address.
	eve := who{Name: "Eve", Colour: blue}
	c.open(srv.URL() + "e2e-e2ee?video=320x180")
	if err := c.eval(`(() => { document.querySelector('input[name=name]').value = 'Eve';
		document.querySelector('input[name=e2ee-passphrase]').value = 'correct horse battery';
		document.querySelector('form').requestSubmit(); return true })()`, nil); err != nil {
		t.Fatal(err)
	}
	within(t, "Eve joined from the pre-join form", 15*time.Second, func() (bool, string) { eve.ID = c.id(); return eve.ID != "", "no id" })
	var eveAddr string
	if err := c.eval(`location.href`, &eveAddr); err != nil || strings.Contains(eveAddr, "horse") || strings.Contains(eveAddr, "#") {
		t.Fatalf("Eve's address after joining with a typed passphrase: %q %v", eveAddr, err)
	}
	within(t, "Ann, Bob and Eve see each other, with the lock", 20*time.Second, func() (bool, string) {
		for _, x := range []*Browser{a, b, c} {
			if s, err := x.e2ee(); err != nil || !s.Lock || len(s.CannotDecrypt) > 0 {
				return false, fmt.Sprintf("%s: %+v %v", x.name, s, err)
			}
		}
		if ok, why := showsWho(a, bob, eve); !ok {
			return false, why
		}
		if ok, why := showsWho(b, ann, eve); !ok {
			return false, why
		}
		return showsWho(c, ann, bob)
	})
	rot := tapForwarded(t, ann.ID)
	watch := startSampler(t, b, ann.ID)
	time.Sleep(time.Second)
	kidBefore := rot.newestKeyID(ann.ID)
	left := time.Now()
	c.Close()
	rotated := rot.awaitNewerKey(t, "Ann's frames under a new key after Eve left", ann.ID, kidBefore, left)
	time.Sleep(2 * time.Second)
	rot.stop()
	samples := watch.Stop()
	around := samples.Window(left.Add(-time.Second), time.Time{})
	if n := len(around); n < 10 || !around[0].OK || !around[n-1].OK {
		t.Fatalf("Bob's samples of Ann around the rotation: %d, first/last ok %v", n, n > 0 && around[0].OK && around[n-1].OK)
	}
	stall := longestStall(around)
	if stall > 500*time.Millisecond {
		t.Fatalf("Bob's video of Ann stalled %v around the key rotation", stall)
	}
	if ok, why := showsWho(b, ann); !ok {
		t.Fatal(why)
	}
	t.Logf("Eve (with the key) left: Ann's frames under key id > %d %v after, Bob's video of Ann never stalled longer than %v (200 ms samples)",
		kidBefore, rotated.Round(time.Millisecond), stall)

	// Rotation on request: Ann's Invite panel gives the link without the
	// passphrase, and its "Rotate encryption key" moves her frames to a newer key
	// id within 2 s while Bob keeps decoding her.
	a.click("button.invite")
	var link, pass string
	if err := a.eval(`document.querySelector('input[name=invite-link]').value`, &link); err != nil {
		t.Fatal(err)
	}
	if err := a.eval(`document.querySelector('input[name=invite-passphrase]').value`, &pass); err != nil {
		t.Fatal(err)
	}
	if pass != "correct horse battery" || strings.Contains(link, "horse") || strings.Contains(link, "#") || strings.Contains(link, "?") {
		t.Fatalf("Ann's invite: link %q, passphrase %q", link, pass)
	}
	asked := tapForwarded(t, ann.ID)
	watch = startSampler(t, b, ann.ID)
	time.Sleep(time.Second)
	kidBefore = asked.newestKeyID(ann.ID)
	clicked := time.Now()
	a.click("button.rotate-key")
	rotated = asked.awaitNewerKey(t, "Ann's frames under a new key after she asked", ann.ID, kidBefore, clicked)
	time.Sleep(2 * time.Second)
	asked.stop()
	around = watch.Stop().Window(clicked.Add(-time.Second), time.Time{})
	if n := len(around); n < 10 || !around[0].OK || !around[n-1].OK {
		t.Fatalf("Bob's samples of Ann around the asked rotation: %d", n)
	}
	if stall = longestStall(around); stall > 500*time.Millisecond {
		t.Fatalf("Bob's video of Ann stalled %v around the asked rotation", stall)
	}
	if ok, why := showsWho(b, ann); !ok {
		t.Fatal(why)
	}
	t.Logf("Ann asked for a new key: invite link %q without the passphrase; her frames under key id > %d %v after the click, Bob's video of Ann never stalled longer than %v",
		link, kidBefore, rotated.Round(time.Millisecond), stall)
}
