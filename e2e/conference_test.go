package e2e

import (
	"fmt"
	"testing"
	"time"
)

// rising reports whether, for every source in from, b receives audio packets and
// decodes video frames that keep increasing over the sampling gap.
func rising(b *Browser, from []string) (bool, string) {
	first, err := b.inbound()
	if err != nil {
		return false, err.Error()
	}
	time.Sleep(700 * time.Millisecond)
	second, err := b.inbound()
	if err != nil {
		return false, err.Error()
	}
	key := func(r Inbound) string { return r.ParticipantID + "/" + r.Kind }
	before := map[string]Inbound{}
	for _, r := range first {
		before[key(r)] = r
	}
	after := map[string]Inbound{}
	for _, r := range second {
		after[key(r)] = r
	}
	for _, id := range from {
		v, a := after[id+"/video"], after[id+"/audio"]
		if v.FramesDecoded <= before[id+"/video"].FramesDecoded || v.FramesDecoded == 0 {
			return false, fmt.Sprintf("%s: video of %s not decoding: %s", b.name, id, describe(second))
		}
		if a.PacketsReceived <= before[id+"/audio"].PacketsReceived {
			return false, fmt.Sprintf("%s: audio of %s not arriving: %s", b.name, id, describe(second))
		}
	}
	return true, ""
}

// meet starts a server and three browsers, Ann, Bob and Cid,
// each with its own camera colour, in one room; it returns once each decodes
// the others' video and receives their audio.
func meet(t *testing.T, room string) (map[string]*Browser, map[string]who) {
	t.Helper()
	srv := startServer(t)
	base := srv.URL() + room + "?video=320x180&name="
	names := []string{"Ann", "Bob", "Cid"}
	browsers := map[string]*Browser{}
	people := map[string]who{}
	for i, n := range names {
		people[n] = who{Name: n, Colour: palette[i]}
		browsers[n] = launch(t, n, camera(t, palette[i], 320, 180))
		browsers[n].open(base + n)
	}
	for _, n := range names {
		b := browsers[n]
		within(t, n+" joined", 15*time.Second, func() (bool, string) {
			p := people[n]
			p.ID = b.id()
			people[n] = p
			return p.ID != "", "no participant id yet"
		})
	}
	for _, n := range names {
		var others []string
		for _, o := range names {
			if o != n {
				others = append(others, people[o].ID)
			}
		}
		took := within(t, n+" decodes both others", 20*time.Second, func() (bool, string) { return rising(browsers[n], others) })
		t.Logf("%s decodes both remote videos and receives both audios (after %v more)", n, took.Round(time.Millisecond))
	}
	return browsers, people
}

// Three browsers meet: each receives the others' audio and video, and each
// tile shows the right participant's camera (by its colour); a browser that
// closes leaves the others' pages, and one whose signaling is cut comes back
// with its identity, its media and the right pictures.
func TestBrowsersMeet(t *testing.T) {
	browsers, people := meet(t, "e2e-meet")
	ids := map[string]string{}
	for n, p := range people {
		ids[n] = p.ID
	}
	for n, b := range browsers {
		var others []who
		for o, p := range people {
			if o != n {
				others = append(others, p)
			}
		}
		within(t, n+"'s tiles show who they say", 5*time.Second, func() (bool, string) { return showsWho(b, others...) })
	}
	t.Log("every tile shows its participant's camera colour")

	// Bob closes his browser: his tile disappears from the others within 2 s.
	browsers["Bob"].Close()
	for _, n := range []string{"Ann", "Cid"} {
		took := within(t, n+" drops Bob's tile", 2*time.Second, func() (bool, string) {
			tiles, err := browsers[n].tiles()
			if err != nil {
				return false, err.Error()
			}
			for _, id := range tiles {
				if id == ids["Bob"] {
					return false, fmt.Sprintf("tiles %v", tiles)
				}
			}
			return true, ""
		})
		t.Logf("%s removed Bob's tile after %v", n, took.Round(time.Millisecond))
	}

	// Ann's signaling connection is cut: she reconnects, keeps her identity, and
	// media flows both ways again within 5 s, with no duplicate tiles.
	if err := browsers["Ann"].eval(`window.podium.conference.session.ws.close(); true`, nil); err != nil {
		t.Fatalf("cut Ann's WebSocket: %v", err)
	}
	cut := time.Now()
	within(t, "media resumes after the cut", 5*time.Second, func() (bool, string) {
		if ok, why := rising(browsers["Ann"], []string{ids["Cid"]}); !ok {
			return false, why
		}
		return rising(browsers["Cid"], []string{ids["Ann"]})
	})
	t.Logf("media resumed %v after the WebSocket was cut", time.Since(cut).Round(time.Millisecond))
	within(t, "Ann's tile at Cid shows Ann after the reconnect", 3*time.Second, func() (bool, string) { return showsWho(browsers["Cid"], people["Ann"]) })
	within(t, "Cid's tile at Ann shows Cid after the reconnect", 3*time.Second, func() (bool, string) { return showsWho(browsers["Ann"], people["Cid"]) })
	for _, n := range []string{"Ann", "Cid"} {
		tiles, err := browsers[n].tiles()
		if err != nil || len(tiles) != 1 {
			t.Errorf("%s: tiles after reconnect = %v (%v), want exactly one", n, tiles, err)
		}
	}
	if id := browsers["Ann"].id(); id != ids["Ann"] {
		t.Errorf("Ann's id after reconnect = %q, want %q (resume)", id, ids["Ann"])
	}
}

// The colour check catches an SFU that sends one participant's video under
// another's name: with the test-only swap (PODIUM_TEST_SWAP_FORWARDING=1, see
// internal/room/testswap.go) Cid gets Ann's video on Bob's track and Bob's on
// Ann's, and showsWho must say so, while Ann's tiles, which the swap leaves
// alone, still pass it.
func TestSwappedForwardingIsCaught(t *testing.T) {
	t.Setenv("PODIUM_TEST_SWAP_FORWARDING", "1")
	browsers, people := meet(t, "e2e-swap")
	ann, bob, cid := people["Ann"], people["Bob"], people["Cid"]
	within(t, "Ann's tiles (not swapped) show who they say", 5*time.Second, func() (bool, string) { return showsWho(browsers["Ann"], bob, cid) })

	// Swapped: each of the two tiles shows the other's colour.
	within(t, "Cid's tiles of Ann and Bob show each other", 5*time.Second, func() (bool, string) {
		got, err := browsers["Cid"].tileColours()
		if err != nil {
			return false, err.Error()
		}
		a, b := got[ann.ID], got[bob.ID]
		ca, _ := nearest(a.R, a.G, a.B)
		cb, _ := nearest(b.R, b.G, b.B)
		return ca == bob.Colour && cb == ann.Colour, fmt.Sprintf("Ann's tile shows %s, Bob's %s; want %s and %s", ca.Name, cb.Name, bob.Colour.Name, ann.Colour.Name)
	})
	ok, detail := showsWho(browsers["Cid"], ann, bob)
	if ok {
		t.Fatal("showsWho passed Cid's swapped tiles: the colour check cannot catch swapped tracks")
	}
	t.Logf("swapped forwarding caught: %s", detail)
}
