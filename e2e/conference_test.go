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

func TestBrowsersMeet(t *testing.T) {
	srv := startServer(t)
	room := srv.URL() + "e2e-meet?video=320x180&name="
	names := []string{"Ann", "Bob", "Cid"}
	browsers := map[string]*Browser{}
	ids := map[string]string{}
	for _, n := range names {
		browsers[n] = launch(t, n)
		browsers[n].open(room + n)
	}
	for _, n := range names {
		b := browsers[n]
		within(t, n+" joined", 15*time.Second, func() (bool, string) {
			ids[n] = b.id()
			return ids[n] != "", "no participant id yet"
		})
	}
	others := func(self string) []string {
		var out []string
		for _, n := range names {
			if n != self {
				out = append(out, ids[n])
			}
		}
		return out
	}
	for _, n := range names {
		took := within(t, n+" decodes both others", 20*time.Second, func() (bool, string) { return rising(browsers[n], others(n)) })
		t.Logf("%s decodes both remote videos and receives both audios (after %v more)", n, took.Round(time.Millisecond))
	}

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
