package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pion/webrtc/v4"
)

// treeCPU is the CPU time (user + system) of process pid and all its
// descendants: a Chromium's browser, renderer, GPU and utility processes.
func treeCPU(pid int) (time.Duration, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:]) // state, ppid, … utime is field 14 of the whole line
		if len(fields) < 13 {
			continue
		}
		p, _ := strconv.Atoi(strings.TrimSpace(s[:strings.IndexByte(s, ' ')]))
		ppid, _ := strconv.Atoi(fields[1])
		ut, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		parent[p], ticks[p] = ppid, ut+st
	}
	var total int64
	for p, t := range ticks {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				total += t
				break
			}
		}
	}
	return time.Duration(total) * 10 * time.Millisecond, nil // USER_HZ 100
}

func (b *Browser) pid() int {
	p := chromedp.FromContext(b.ctx).Browser.Process()
	if p == nil {
		b.t.Fatalf("%s: no browser process", b.name)
	}
	return p.Pid
}

func (b *Browser) framesDecodedFrom(id string) int {
	rows, err := b.inbound()
	if err != nil {
		b.t.Fatal(err)
	}
	for _, r := range rows {
		if r.ParticipantID == id && r.Kind == "video" {
			return r.FramesDecoded
		}
	}
	return 0
}

// What end-to-end encryption costs (docs/e2ee.md, "Overhead"): two Chromiums
// in a call at 320x180, first without, then with a passphrase. For each: the
// mean RTP payload per forwarded packet of Ann's audio and video (the SFU's
// tap), and Bob's CPU (all his browser's processes) per frame of Ann's video he
// decoded, over 10 s. Bob sends as well, so this is the whole call's cost per
// frame, encryption and decryption included. Logged, not judged: it measures,
// on a shared box, what the docs quote.
func TestE2EEOverhead(t *testing.T) {
	srv := startServer(t)
	for _, mode := range []struct{ name, fragment string }{{"plain", ""}, {"e2ee", "#e2ee=overhead"}} {
		base := srv.URL() + "e2e-cost-" + mode.name + "?video=320x180&name="
		ann := who{Name: "Ann", Colour: red}
		bob := who{Name: "Bob", Colour: green}
		a := launch(t, "Ann-"+mode.name, camera(t, red, 320, 180), autoplay)
		a.withMicrophone(true)
		b := launch(t, "Bob-"+mode.name, camera(t, green, 320, 180), autoplay)
		b.withMicrophone(true)
		ann.ID = a.join(base, ann.Name+mode.fragment)
		bob.ID = b.join(base, bob.Name+mode.fragment)
		within(t, mode.name+": Ann and Bob see each other", 20*time.Second, func() (bool, string) {
			if ok, why := showsWho(a, bob); !ok {
				return false, why
			}
			return showsWho(b, ann)
		})
		time.Sleep(2 * time.Second)
		tap := tapForwarded(t, ann.ID)
		cpu0, err := treeCPU(b.pid())
		if err != nil {
			t.Fatal(err)
		}
		f0 := b.framesDecodedFrom(ann.ID)
		time.Sleep(10 * time.Second)
		cpu1, err := treeCPU(b.pid())
		if err != nil {
			t.Fatal(err)
		}
		f1 := b.framesDecodedFrom(ann.ID)
		tap.stop()
		if f1-f0 < 100 {
			t.Fatalf("%s: Bob decoded %d frames of Ann in 10 s", mode.name, f1-f0)
		}
		mean := func(kind webrtc.RTPCodecType) string {
			pk := tap.of(ann.ID, kind)
			n := 0
			for _, p := range pk {
				n += len(p.Payload)
			}
			return fmt.Sprintf("%d packets, %.1f B payload", len(pk), float64(n)/float64(max(len(pk), 1)))
		}
		t.Logf("%s: Ann's audio %s, video %s per packet; Bob decoded %d frames of Ann, his browser used %v CPU: %.2f ms per frame",
			mode.name, mean(webrtc.RTPCodecTypeAudio), mean(webrtc.RTPCodecTypeVideo), f1-f0, (cpu1 - cpu0).Round(10*time.Millisecond),
			float64((cpu1-cpu0).Microseconds())/1000/float64(f1-f0))
		a.Close()
		b.Close()
	}
}
