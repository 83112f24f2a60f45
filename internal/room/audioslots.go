package room

import (
	"slices"
	"strconv"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/audiosel"
	"github.com/podium-sfu/podium/internal/algo/speaker"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// Audio selection (issue 16, docs/speaker.md "Audio selection"): with
// Settings.AudioSlots = A > 0, a receiver whose client plays audio slots
// (JoinOptions.AudioSlots) gets A audio tracks for the whole session instead
// of one per microphone; the room's audiosel.Selector picks at most A
// speakers and each receiver's slots carry them, itself left out. A slot
// changes source without renegotiation (forward.NewAudioSlot), and the
// client is told whose voice each slot carries (signal.AudioSlots).
// Microphones outside the selection are sent to nobody. Screen-share audio
// and receivers without slots (E2EE clients, WHEP players, other bridges)
// keep one track per source.

// opusSlot is the codec a slot is negotiated with: the only audio codec
// Podium forwards.
var opusSlot = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}

// audioState is the room's audio selection; the room loop owns it.
type audioState struct {
	sel      *audiosel.Selector // nil until the first receiver with slots joins
	selected []audiosel.ID
	speech   []speaker.Speech     // scratch
	cands    []audiosel.Candidate // scratch
	want     []audiosel.ID        // scratch
}

// slotSet is one receiver's audio slots.
type slotSet struct {
	tracks []*forward.DownTrack
	ids    []audiosel.ID      // whose microphone each carries ("": none)
	ups    []*forward.UpTrack // the UpTrack each carries (a participant may publish its microphone anew)
	told   bool               // the client was told ids
}

// addSlots gives a joining receiver the room's A slots, when it plays them
// and does not decrypt end to end (a slot's sources change under the
// receiver's decryptor, which keys frames by sender: docs/e2ee.md).
func (s *state) addSlots(m *member, opts JoinOptions) {
	n := s.settings.AudioSlots
	if n <= 0 || !opts.AudioSlots || m.info.E2EE || !m.perms.Subscribe {
		return
	}
	if s.audio.sel == nil {
		s.audio.sel = audiosel.New(audiosel.Config{Slots: n, Hold: audiosel.DefaultHold, Speaking: audiosel.DefaultSpeaking})
	}
	m.slots = slotSet{ids: make([]audiosel.ID, n), ups: make([]*forward.UpTrack, n)}
	for i := range n {
		d := forward.NewAudioSlot(m.info.ID, signal.SlotStreamPrefix+strconv.Itoa(i), opusSlot)
		m.slots.tracks = append(m.slots.tracks, d)
		m.m.AddDownTrack(d)
	}
}

// slotted reports whether to gets up through its slots rather than a track
// of its own: a participant's microphone (not a screen share's audio) for a
// receiver with slots.
func (s *state) slotted(to *member, up *forward.UpTrack) bool {
	if len(to.slots.tracks) == 0 || up.Kind() != webrtc.RTPCodecTypeAudio {
		return false
	}
	_, mic := s.members[up.Source()]
	return mic
}

// dropSlots retires a leaving receiver's slots.
func (s *state) dropSlots(m *member) {
	for _, d := range m.slots.tracks {
		d.SetSource(nil)
		s.retired.addDown(d)
	}
	m.slots = slotSet{}
}

// selectAudio brings the selection up to now and points every receiver's
// slots at it. The room calls it after each speaker decision and whenever
// membership or publishing changed (reselect).
func (s *state) selectAudio(now time.Time) {
	a := &s.audio
	if a.sel == nil {
		return
	}
	a.speech = s.detector.Speech(a.speech[:0])
	a.cands = a.cands[:0]
	block := speaker.DefaultConfig().MediumBlock
	for _, m := range s.sorted() {
		if m.audio() == nil || m.mutedAudio {
			continue
		}
		c := audiosel.Candidate{ID: audiosel.ID(m.info.ID)}
		if i := slices.IndexFunc(a.speech, func(sp speaker.Speech) bool { return string(sp.ID) == m.info.ID }); i >= 0 {
			c.Score = audiosel.ScoreOf(a.speech[i].Long, a.speech[i].Medium, block)
		}
		a.cands = append(a.cands, c)
	}
	a.sel.SetSlots(s.settings.AudioSlots, audiosel.ID(s.dominant))
	a.selected = a.sel.Update(now, audiosel.ID(s.dominant), a.cands, a.selected[:0])
	for _, m := range s.members {
		if len(m.slots.tracks) > 0 {
			s.fillSlots(m)
		}
	}
}

// fillSlots points m's slots at the selection, itself (and a peer it gets
// directly) left out, and tells its client when a slot changed hands.
func (s *state) fillSlots(m *member) {
	a := &s.audio
	a.want = a.want[:0]
	peer, direct := s.p2pPeer(m)
	for _, id := range a.selected {
		if string(id) != m.info.ID && !(direct && string(id) == peer) {
			a.want = append(a.want, id)
		}
	}
	changed := audiosel.Assign(m.slots.ids, a.want)
	for i, id := range m.slots.ids {
		var up *forward.UpTrack
		if p, ok := s.members[string(id)]; ok && id != "" {
			up = p.audio()
		}
		if up != m.slots.ups[i] {
			m.slots.ups[i] = up
			m.slots.tracks[i].SetSource(up)
		}
	}
	if changed || !m.slots.told {
		m.slots.told = true
		ids := make([]string, len(m.slots.ids))
		for i, id := range m.slots.ids {
			ids[i] = string(id)
		}
		m.m.Send(signal.TypeAudioSlots, signal.AudioSlots{IDs: ids})
	}
}
