// Package layers chooses which simulcast encoding and temporal layer a receiver gets
// for one source. It is pure: the caller passes what it knows about the encodings and
// what the receiver shows, and gets a decision back.
package layers

// Encoding describes one simulcast encoding of a source as the SFU observes it.
type Encoding struct {
	Width, Height int  // from the last keyframe; 0 when not known yet
	Active        bool // packets arrived recently
	Bitrate       int  // measured bits per second (0: unknown)
}

// Want is what a receiver shows of a source.
type Want struct {
	Width, Height int  // rendered size in device pixels; 0 means a thumbnail
	Stage         bool // the large view: the highest encoding bandwidth allows (thesis ch. 5)
}

// Nominal sizes of the q/h/f encodings of a 720p capture, used before keyframes tell
// the real ones.
var nominal = [3][2]int{{320, 180}, {640, 360}, {1280, 720}}

// thumbnail is what a video without a size constraint is shown as.
var thumbnail = Want{Width: 320, Height: 180}

// Choice is a layer decision: Encoding -1 means forward nothing.
type Choice struct {
	Encoding    int
	MaxTemporal int
}

// Choose returns the smallest active encoding that covers want (the highest for the
// stage), or the largest active one when none does; within budget (bits per second, <= 0: unlimited) it steps down to
// the largest encoding whose measured bitrate fits. Without any active encoding it
// returns the requested index anyway, so the switch happens as soon as it appears.
func Choose(encs []Encoding, want Want, budget int) Choice {
	if len(encs) == 0 {
		return Choice{Encoding: -1}
	}
	if want.Stage {
		want = Want{Width: 1 << 20, Height: 1 << 20}
	} else if want.Width <= 0 || want.Height <= 0 {
		want = thumbnail
	}
	pick := -1
	for i := range encs {
		if !encs[i].Active {
			continue
		}
		pick = i
		w, h := size(encs, i)
		if w >= want.Width*9/10 && h >= want.Height*9/10 { // 10 % slack: 352 wide covers 360
			break
		}
	}
	if pick < 0 {
		return Choice{Encoding: covering(encs, want), MaxTemporal: 2}
	}
	if budget > 0 {
		for pick > 0 && encs[pick].Bitrate > budget {
			pick--
			for pick > 0 && !encs[pick].Active {
				pick--
			}
		}
	}
	return Choice{Encoding: pick, MaxTemporal: 2}
}

// covering is the index Choose would pick if every encoding were active.
func covering(encs []Encoding, want Want) int {
	for i := range encs {
		w, h := size(encs, i)
		if w >= want.Width*9/10 && h >= want.Height*9/10 {
			return i
		}
	}
	return len(encs) - 1
}

func size(encs []Encoding, i int) (int, int) {
	if encs[i].Width > 0 {
		return encs[i].Width, encs[i].Height
	}
	if len(encs) == 1 {
		return nominal[2][0], nominal[2][1]
	}
	return nominal[min(i, 2)][0], nominal[min(i, 2)][1]
}
