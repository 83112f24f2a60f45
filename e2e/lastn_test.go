package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// decodingVideos lists the sources whose video b is decoding right now.
func decodingVideos(b *Browser) ([]string, string, error) {
	first, err := b.inbound()
	if err != nil {
		return nil, "", err
	}
	time.Sleep(600 * time.Millisecond)
	second, err := b.inbound()
	if err != nil {
		return nil, "", err
	}
	before := map[string]int{}
	for _, r := range first {
		if r.Kind == "video" {
			before[r.ParticipantID] = r.FramesDecoded
		}
	}
	var out []string
	for _, r := range second {
		if r.Kind == "video" && r.FramesDecoded > before[r.ParticipantID] {
			out = append(out, r.ParticipantID)
		}
	}
	return out, describe(second), nil
}

func decodesOnly(b *Browser, want string) func() (bool, string) {
	return func() (bool, string) {
		got, detail, err := decodingVideos(b)
		if err != nil {
			return false, err.Error()
		}
		var fw struct {
			Forwarded []string `json:"forwarded"`
			Speaker   *string  `json:"speaker"`
		}
		_ = b.eval(`({forwarded: window.podium.forwarded(), speaker: window.podium.speaker()})`, &fw)
		speaker := "none"
		if fw.Speaker != nil {
			speaker = *fw.Speaker
		}
		return len(got) == 1 && got[0] == want, fmt.Sprintf("%s decodes %v, want only %s; forwarded %v, speaker %v; %s", b.name, got, want, fw.Forwarded, speaker, detail)
	}
}

type outbound struct {
	Kind      string `json:"kind"`
	BytesSent int    `json:"bytesSent"`
}

func (b *Browser) videoBytesSent() (int, error) {
	var s struct {
		Outbound []outbound `json:"outbound"`
	}
	if err := b.eval(`window.podium.stats()`, &s); err != nil {
		return 0, err
	}
	total := 0
	for _, o := range s.Outbound {
		if o.Kind == "video" {
			total += o.BytesSent
		}
	}
	return total, nil
}

// videoRate is b's outbound video over d, in kb/s.
func (b *Browser) videoRate(d time.Duration) (int, error) {
	before, err := b.videoBytesSent()
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	after, err := b.videoBytesSent()
	return int(float64(after-before) * 8 / 1000 / d.Seconds()), err
}

func (b *Browser) join(base, name string) string {
	b.t.Helper()
	b.open(base + name)
	var id string
	within(b.t, name+" joined", 15*time.Second, func() (bool, string) {
		id = b.id()
		return id != "", "no id"
	})
	return id
}

// Three participants with Last N = 1: everybody receives only the dominant speaker's
// video (the speaker receives the previous one), the participant nobody watches
// stops sending video, and when another participant starts speaking in the same
// call (its microphone switched from silence to speech, the old speaker's to
// silence) the video follows: forwarded within 2 s, and every tile that shows a
// picture shows the speaker's camera.
func TestLastNFollowsTheSpeaker(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) { c.LastN = 1 })
	base := srv.URL() + "e2e-lastn?video=320x180&name="
	browsers := map[string]*Browser{}
	people := map[string]who{}
	for i, n := range []string{"A", "B", "C"} {
		b := launch(t, n, camera(t, palette[i], 320, 180), autoplay)
		b.withMicrophone(n == "A")
		browsers[n] = b
		people[n] = who{Name: n, ID: b.join(base, n), Colour: palette[i]}
	}
	a, b, c := browsers["A"], browsers["B"], browsers["C"]
	aID, bID := people["A"].ID, people["B"].ID

	within(t, "B decodes only A", 10*time.Second, decodesOnly(b, aID))
	within(t, "C decodes only A", 10*time.Second, decodesOnly(c, aID))
	within(t, "B's and C's tile of A shows A", 3*time.Second, func() (bool, string) {
		if ok, why := showsWho(b, people["A"]); !ok {
			return false, why
		}
		return showsWho(c, people["A"])
	})

	// C is nobody's choice (A watches B, the previous speaker in the order): paused.
	within(t, "C told to pause", 5*time.Second, func() (bool, string) {
		var paused bool
		err := c.eval(`window.podium.videoPaused()`, &paused)
		return err == nil && paused, fmt.Sprintf("paused=%v err=%v", paused, err)
	})
	within(t, "C's outbound video stops", 5*time.Second, func() (bool, string) {
		before, err := c.videoBytesSent()
		if err != nil {
			return false, err.Error()
		}
		time.Sleep(2 * time.Second)
		after, err := c.videoBytesSent()
		rate := float64(after-before) * 8 / 2 / 1000
		return err == nil && rate < 5, fmt.Sprintf("C sends video at %.1f kb/s", rate)
	})
	t.Logf("C (watched by nobody) paused, outbound video ~0 kb/s")

	// In the same call, A falls silent and B starts speaking.
	a.speak(false)
	b.speak(true)
	took := within(t, "C's forwarded video switches to the new speaker B", 2*time.Second, func() (bool, string) {
		var ids []string
		err := c.eval(`window.podium.forwarded()`, &ids)
		return err == nil && len(ids) == 1 && ids[0] == bID, fmt.Sprintf("forwarded %v (%v), want [%s]", ids, err, bID)
	})
	t.Logf("forwarded video switched to the new speaker %v after the microphones switched", took.Round(time.Millisecond))
	within(t, "C decodes only B", 3*time.Second, decodesOnly(c, bID))
	within(t, "A decodes only B", 3*time.Second, decodesOnly(a, bID))
	within(t, "A's and C's tile of B shows B", 3*time.Second, func() (bool, string) {
		if ok, why := showsWho(a, people["B"]); !ok {
			return false, why
		}
		return showsWho(c, people["B"])
	})
}
