package clip

import (
	"embed"
	"fmt"
	"sync"
)

//go:embed data/*.ivf data/*.ogg data/*.levels
var files embed.FS

// Video clips, by the simulcast encoding they stand for.
const (
	Video180p   = "vp8-180p30" // 320x180, 30 fps, 150 kb/s
	Video360p   = "vp8-360p30" // 640x360, 30 fps, 500 kb/s
	Video720p   = "vp8-720p30" // 1280x720, 30 fps, 2.5 Mb/s
	Video180p15 = "vp8-180p15" // 320x180, 15 fps, 100 kb/s (low-rate single layer)
)

// Audio clips.
const (
	Speech = "speech" // synthetic speech, Opus 32 kb/s
	Noise  = "noise"  // quiet room noise, Opus
)

var cache struct {
	sync.Mutex
	videos map[string]*Video
	audios map[string]*Audio
}

// LoadVideo returns a parsed video clip; clips are parsed once and shared
// read-only.
func LoadVideo(name string) (*Video, error) {
	cache.Lock()
	defer cache.Unlock()
	if v, ok := cache.videos[name]; ok {
		return v, nil
	}
	b, err := files.ReadFile("data/" + name + ".ivf")
	if err != nil {
		return nil, fmt.Errorf("video clip %q: %w", name, err)
	}
	v, err := ParseIVF(b)
	if err != nil {
		return nil, fmt.Errorf("video clip %q: %w", name, err)
	}
	if cache.videos == nil {
		cache.videos = map[string]*Video{}
	}
	cache.videos[name] = v
	return v, nil
}

// LoadAudio returns a parsed audio clip with its levels, shared read-only.
func LoadAudio(name string) (*Audio, error) {
	cache.Lock()
	defer cache.Unlock()
	if a, ok := cache.audios[name]; ok {
		return a, nil
	}
	b, err := files.ReadFile("data/" + name + ".ogg")
	if err != nil {
		return nil, fmt.Errorf("audio clip %q: %w", name, err)
	}
	packets, err := ParseOggOpus(b)
	if err != nil {
		return nil, fmt.Errorf("audio clip %q: %w", name, err)
	}
	levels, err := files.ReadFile("data/" + name + ".levels")
	if err != nil {
		return nil, fmt.Errorf("audio clip %q: %w", name, err)
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("audio clip %q: %w: no levels", name, ErrFormat)
	}
	a := &Audio{Packets: packets, Levels: levels}
	if cache.audios == nil {
		cache.audios = map[string]*Audio{}
	}
	cache.audios[name] = a
	return a, nil
}

// Level is the RFC 6464 level of frame i (the levels repeat if the clip has
// more packets than levels).
func (a *Audio) Level(i int) uint8 { return a.Levels[i%len(a.Levels)] }
