package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
		return len(got) == 1 && got[0] == want, fmt.Sprintf("%s decodes %v, want only %s; %s", b.name, got, want, detail)
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
// video (the speaker receives the previous one), the video follows a change of
// speaker, and the participant nobody watches stops sending video.
func TestLastNFollowsTheSpeaker(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) { c.LastN = 1 })
	base := srv.URL() + "e2e-lastn?video=320x180&name="
	speech, silence := speechWAV(t), silenceWAV(t)
	withAudio := func(file string) chromedp.ExecAllocatorOption {
		return chromedp.Flag("use-file-for-fake-audio-capture", file)
	}

	a := launch(t, "A", withAudio(speech))
	aID := a.join(base, "A")
	b := launch(t, "B", withAudio(silence))
	bID := b.join(base, "B")
	c := launch(t, "C", withAudio(silence))
	cID := c.join(base, "C")

	within(t, "B decodes only A", 10*time.Second, decodesOnly(b, aID))
	within(t, "C decodes only A", 10*time.Second, decodesOnly(c, aID))

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

	// Roles switch: A restarts silent, then B restarts speaking.
	a.Close()
	a = launch(t, "A2", withAudio(silence))
	aID = a.join(base, "A2")
	b.Close()
	b = launch(t, "B2", withAudio(speech))
	bID = b.join(base, "B2")
	took := within(t, "C's forwarded video switches to the new speaker", 2*time.Second, func() (bool, string) {
		var ids []string
		err := c.eval(`window.podium.forwarded()`, &ids)
		return err == nil && len(ids) == 1 && ids[0] == bID, fmt.Sprintf("forwarded %v (%v), want [%s]", ids, err, bID)
	})
	t.Logf("forwarded video switched to the new speaker %v after it joined speaking", took.Round(time.Millisecond))
	within(t, "C decodes only the new speaker", 3*time.Second, decodesOnly(c, bID))
	within(t, "A decodes only the new speaker", 3*time.Second, decodesOnly(a, bID))
	_ = cID
}
