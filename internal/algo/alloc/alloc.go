// Package alloc distributes one receiver's bandwidth estimate over the videos
// it receives. Sources are served in priority order (pinned and on-stage first,
// then Last N order): first every source gets its lowest layer at the lowest
// temporal layer that fits, so that everyone keeps some video, then the sources
// are upgraded in priority order toward what the receiver shows, never above
// the encoding layers.Choose would pick without a budget. Audio is reserved
// first. When not even the lowest layer fits, the source is suspended and the
// client can be told that its video stopped for bandwidth, not froze.
//
// Hysteresis keeps a steady capacity near a layer threshold from causing
// switches: an upgrade needs the budget to cover the new total with a margin
// for a dwell time, and a failed upgrade (downgraded soon after) doubles that
// source's dwell; a downgrade happens at once when the allocation exceeds the
// budget by more than a shortfall margin, and after a short grace when it
// exceeds it by less (one delay-based cut of the estimate).
//
// The Allocator is a pure state machine: time is an argument, it starts no
// goroutine, takes no lock and does not log.
package alloc

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/algo/layers"
)

// MaxTemporal is the highest temporal layer index (VP8 L1T3: 0, 1, 2).
const MaxTemporal = 2

// newGround: a failed upgrade's back-off holds while the video budget is
// below this × the budget the upgrade was made under. Beside competing
// downloads the estimate swings by more than 1.25× within seconds: at 1.25
// the browser test switched layers about twice as often under one flow.
const newGround = 2

// Layer is one simulcast encoding of a source as the SFU measures it.
type Layer struct {
	Width, Height int  // from the last keyframe; 0 when not known yet
	Active        bool // packets arrived recently
	// Bitrate[t] is the measured bits per second of this encoding when
	// forwarding temporal layers 0..t (cumulative: TL0, TL0+1, TL0+1+2). A zero
	// marks a temporal layer that is absent or not measured; when all are zero
	// the allocator assumes nominal rates (150 kb/s, 500 kb/s, 2.5 Mb/s by
	// encoding index, 40 / 60 / 100 % per temporal layer). An inactive
	// encoding's rates, when known, are those it had when last measured.
	Bitrate [MaxTemporal + 1]int
}

// Source is one video the receiver gets.
type Source struct {
	ID string
	// Priority orders the sources: 0 is the highest (pinned, on stage), then
	// Last N order. Ties keep the order of the slice.
	Priority int
	// Layers are the encodings, lowest first.
	Layers []Layer
	// Want is what the receiver shows of the source.
	Want layers.Want
	// Preempts: the source may take what lower-priority sources hold above
	// their lowest step to start or climb (a screen share: unreadable when
	// degraded, where a camera degrades gracefully). Without it a camera
	// measured first kept its top layer and a share started later stayed on
	// its lowest.
	Preempts bool
}

// Allocation is the decision for one source.
type Allocation struct {
	ID string
	// Encoding and MaxTemporal are what to forward. Encoding is -1 only for a
	// source without encodings. For a source without any active encoding they
	// name the one to switch to when it appears, at no cost.
	Encoding, MaxTemporal int
	// Suspended: not even the lowest layer fits the budget. Forward nothing
	// and tell the client the video is off for bandwidth reasons.
	Suspended bool
	// Bitrate is what the allocation is expected to cost (bits per second).
	Bitrate int
}

// Config holds the hysteresis parameters.
type Config struct {
	// UpMargin: an upgrade needs the video budget to be at least
	// (1 + UpMargin) × the video total after the upgrade.
	UpMargin float64
	// DownMargin: the current allocation is kept while its total is at most
	// (1 + DownMargin) × the video budget; above that it is reduced at once.
	DownMargin float64
	// Dwell is how long an upgrade must stay possible before it happens.
	Dwell time.Duration
	// FailWindow: a downgrade within this time of a source's upgrade makes the
	// upgrade a failure, which doubles the source's dwell up to MaxDwell.
	FailWindow, MaxDwell time.Duration
	// ResetAfter: a source without a failed upgrade for this long is back to
	// Dwell.
	ResetAfter time.Duration
	// SuspendAfter: a playing source whose lowest step no longer fits keeps
	// it this long before it is suspended (unless the video budget is below
	// half of it): pausing video is the most visible decision, and a dip of the
	// estimate must not cause it. After a sudden capacity drop the estimate
	// undershoots the new capacity for several seconds (the old rate's queue
	// and losses); measured on a 128 kb/s tbf, 2 s paused the video for 8 s.
	SuspendAfter time.Duration
	// SuspendFarBelowAfter is the grace when the video budget is below half
	// the lowest step. Right after a sudden drop the estimate can dip that far
	// for a second or two (measured: 30 kb/s on a 128 kb/s link, back to
	// 100 kb/s 3 s later); a link that really is that poor costs the audio
	// this long.
	SuspendFarBelowAfter time.Duration
	// OversendOnStage: the stage's video (the first source, when its
	// Priority is 0) keeps playing its lowest step while that step costs at
	// most this much more than the video budget (bits per second), instead of
	// being suspended; lower-priority videos give way to it first. A few
	// frames a second beat a paused stage (Jitsi's oversend on stage): on a
	// 128 kb/s link the estimate once fell to 48 kb/s for seconds, and the
	// suspended stage froze for 13 s. Beyond the bound the link cannot carry
	// it beside the audio. 0: no oversending.
	OversendOnStage int
	// ShortfallMargin, ShortfallGrace: a playing source whose current step
	// no longer fits (1 + DownMargin) × the video budget, but fits
	// (1 + ShortfallMargin) × it, keeps that step for ShortfallGrace before it
	// is lowered. One delay-based overuse cuts the estimate to 0.85 × what was
	// delivered, just under what the allocation costs: at a cap 25 % above
	// the top layer a burst of a noisy encoder's frames did that, and the
	// layer went down and back up two or three times a minute (CI), while the
	// estimate was back above the layer within a second or two. A capacity
	// that really fell below the allocation cuts the estimate to 0.85 × the
	// lower delivery, past the margin, and the layer goes at once.
	ShortfallMargin float64
	ShortfallGrace  time.Duration
}

// DefaultConfig returns the defaults (docs/bwe.md explains them).
func DefaultConfig() Config {
	return Config{
		UpMargin:             0.05,
		DownMargin:           0.10,
		Dwell:                1500 * time.Millisecond,
		FailWindow:           5 * time.Second,
		MaxDwell:             30 * time.Second,
		ResetAfter:           60 * time.Second,
		SuspendAfter:         10 * time.Second,
		SuspendFarBelowAfter: 3 * time.Second,
		OversendOnStage:      64_000,
		ShortfallMargin:      0.25,
		ShortfallGrace:       2 * time.Second,
	}
}

// Validate reports whether the parameters are consistent.
func (c Config) Validate() error {
	var errs []error
	if !(c.UpMargin >= 0 && c.UpMargin < 1) || !(c.DownMargin >= 0 && c.DownMargin < 1) {
		errs = append(errs, fmt.Errorf("margins must be in [0, 1), got up %v down %v", c.UpMargin, c.DownMargin))
	}
	if !(c.ShortfallMargin >= c.DownMargin && c.ShortfallMargin < 1) {
		errs = append(errs, fmt.Errorf("ShortfallMargin must be in [DownMargin, 1), got %v", c.ShortfallMargin))
	}
	if c.Dwell < 0 || c.MaxDwell < c.Dwell || c.FailWindow < 0 || c.ResetAfter < 0 || c.SuspendAfter < 0 || c.SuspendFarBelowAfter < 0 || c.OversendOnStage < 0 || c.ShortfallGrace < 0 {
		errs = append(errs, errors.New("need 0 <= Dwell <= MaxDwell and non-negative FailWindow, ResetAfter, SuspendAfter, SuspendFarBelowAfter, OversendOnStage, ShortfallGrace"))
	}
	return errors.Join(errs...)
}

// step is one rung of a source's ladder: forwarding encoding enc with
// temporal layers up to tl costs rate.
type step struct {
	enc, tl int
	rate    int
}

// state is what the allocator remembers of a source between calls.
type state struct {
	enc, tl   int  // current allocation; enc -1: suspended
	capEnc    int  // the want cap at the last call
	capTL     int  //
	limited   bool // below its want cap for lack of budget
	pending   bool // an upgrade is possible and waiting for its dwell
	upSince   time.Time
	dwell     time.Duration
	lastUp    time.Time
	upVideo   int // the video budget the last upgrade was made under
	upRate    int // and the rate of the step it went to
	lastFail  time.Time
	failVideo int       // the video budget the failed upgrade was made under
	short     time.Time // since when its lowest step has not fit; zero: it fits
	seen      uint64
	hasLadder bool
}

// Allocator allocates one receiver's bandwidth. It is not safe for concurrent
// use: the loop that owns the receiver's estimate calls it.
type Allocator struct {
	cfg     Config
	states  map[string]*state
	gen     uint64
	desired int
	next    time.Time
	// shortfall: since when the allocation has been kept in the shortfall
	// grace; zero when it is not.
	shortfall time.Time

	// Scratch, reused between calls.
	ladders [][]step
	order   []int
	cur     []int // index of the current step in each ladder; -1 none
	hold    []int
	spare   []int // the hold allocation with ShortfallMargin
	up      []int
	out     []Allocation // what Allocate returns
}

// New returns an allocator. It panics if cfg is invalid (see Config.Validate).
func New(cfg Config) *Allocator {
	if err := cfg.Validate(); err != nil {
		panic("alloc: invalid config: " + err.Error())
	}
	return &Allocator{cfg: cfg, states: make(map[string]*state)}
}

// Desired returns what the last Allocate call would have needed to give every
// source what the receiver shows, margin and audio included (bits per
// second), or 0 when every source already gets that. Pass it to
// bwe.Estimator.ProbeWanted.
func (a *Allocator) Desired() int { return a.desired }

// Config returns the allocator's parameters.
func (a *Allocator) Config() Config { return a.cfg }

// NextTimeout returns when a pending upgrade's dwell ends, so the owner can call
// Allocate then; the zero Time means none is pending.
func (a *Allocator) NextTimeout() time.Time { return a.next }

// Allocate distributes budget (bits per second, the bandwidth estimate) over
// sources after reserving audio, and returns one Allocation per source in the
// order of sources, valid until the next call (the slice is reused). Call it
// whenever the estimate, the sources or their measured rates change, and at
// NextTimeout.
func (a *Allocator) Allocate(now time.Time, budget, audio int, sources []Source) []Allocation {
	a.gen++
	video := max(budget-audio, 0)
	n := len(sources)
	a.prepare(n)
	for i := range sources {
		a.ladders[i] = buildLadder(a.ladders[i][:0], &sources[i])
	}
	slices.SortStableFunc(a.order, func(x, y int) int { return sources[x].Priority - sources[y].Priority })

	// Where each source is now.
	wantTotal := 0
	for i := range sources {
		st := a.state(sources[i].ID)
		lad := a.ladders[i]
		a.cur[i] = -1
		if len(lad) > 0 {
			wantTotal += lad[len(lad)-1].rate
			if st.hasLadder && st.enc >= 0 {
				a.cur[i] = locate(lad, st.enc, st.tl)
			}
		}
	}
	a.desired = audio + int(float64(wantTotal)*(1+a.cfg.UpMargin))

	stage := -1
	if n > 0 && sources[a.order[0]].Priority == 0 {
		stage = a.order[0]
	}
	a.next = time.Time{}
	a.holdPass(a.hold, float64(video)*(1+a.cfg.DownMargin), stage)
	a.keepInShortfall(now, float64(video)*(1+a.cfg.ShortfallMargin), stage)
	a.preemptPass(sources, float64(video)/(1+a.cfg.UpMargin))
	a.upPass(float64(video) / (1 + a.cfg.UpMargin))

	a.out = slices.Grow(a.out[:0], n)[:n]
	out := a.out
	for i := range sources {
		out[i] = a.decide(now, &sources[i], i, video)
	}
	if a.allAtTop(out) {
		// Every video gets all it could use: nothing to probe for. Probing a
		// link the allocation just fits only risks an overuse that costs a
		// layer (measured: a cap 25 % above the top layer lost it to probes).
		a.desired = 0
	}
	for id, st := range a.states {
		if st.seen != a.gen {
			delete(a.states, id)
		}
	}
	return out
}

// allAtTop reports whether every source with a ladder got its top step.
func (a *Allocator) allAtTop(out []Allocation) bool {
	for i, o := range out {
		lad := a.ladders[i]
		if len(lad) == 0 {
			continue
		}
		top := lad[len(lad)-1]
		if o.Suspended || o.Encoding != top.enc || o.MaxTemporal != top.tl {
			return false
		}
	}
	return true
}

func (a *Allocator) prepare(n int) {
	for len(a.ladders) < n {
		a.ladders = append(a.ladders, nil)
	}
	a.order = a.order[:0]
	for i := 0; i < n; i++ {
		a.order = append(a.order, i)
	}
	a.cur = resize(a.cur, n)
	a.hold = resize(a.hold, n)
	a.spare = resize(a.spare, n)
	a.up = resize(a.up, n)
}

func resize(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

func (a *Allocator) state(id string) *state {
	st, ok := a.states[id]
	if !ok {
		st = &state{enc: -1, dwell: a.cfg.Dwell}
		a.states[id] = st
	}
	st.seen = a.gen
	return st
}

// holdPass computes into hold the allocation that keeps what each source has,
// as far as the budget allows: everyone's lowest step first, then the current
// steps in priority order. Sources without a current step (new, suspended) get
// nothing here; upgrading them is upPass's job. The playing stage video
// (stage: its index, or -1) keeps its lowest step up to OversendOnStage over
// the budget.
func (a *Allocator) holdPass(hold []int, budget float64, stage int) {
	remaining := budget
	for _, i := range a.order {
		hold[i] = -1
		if a.cur[i] < 0 {
			continue
		}
		rate := float64(a.ladders[i][0].rate)
		if rate <= remaining || i == stage && rate <= remaining+float64(a.cfg.OversendOnStage) {
			hold[i] = 0
			remaining = max(remaining-rate, 0)
		}
	}
	for _, i := range a.order {
		if hold[i] < 0 {
			continue
		}
		lad := a.ladders[i]
		base := lad[0].rate
		for k := a.cur[i]; k > 0; k-- {
			if extra := float64(lad[k].rate - base); extra <= remaining {
				hold[i] = k
				remaining -= extra
				break
			}
		}
	}
}

// keepInShortfall makes the hold allocation the current one, for at most
// ShortfallGrace, when holdPass lowered a playing video but the current
// allocation fits budget (the video budget with ShortfallMargin): one cut of
// the estimate, which is back within a second or two when the link still
// carries what is sent. The allocation is kept whole, so nothing climbs with
// what a lowered video would have freed.
func (a *Allocator) keepInShortfall(now time.Time, budget float64, stage int) {
	if !a.lowersPlaying(a.hold) || a.suspendsPlaying(a.hold) {
		a.shortfall = time.Time{} // suspending has its own grace (SuspendAfter)
		return
	}
	a.holdPass(a.spare, budget, stage)
	if a.lowersPlaying(a.spare) {
		a.shortfall = time.Time{} // short by more than the margin: lowered at once
		return
	}
	if a.shortfall.IsZero() {
		a.shortfall = now
	}
	if due := a.shortfall.Add(a.cfg.ShortfallGrace); now.Before(due) {
		copy(a.hold, a.spare)
		a.next = due
	}
}

// lowersPlaying reports whether hold puts a playing video below its current
// step.
func (a *Allocator) lowersPlaying(hold []int) bool {
	for i, h := range hold {
		if a.cur[i] >= 0 && h < a.cur[i] {
			return true
		}
	}
	return false
}

// suspendsPlaying reports whether hold leaves a playing video without a step.
func (a *Allocator) suspendsPlaying(hold []int) bool {
	for i, h := range hold {
		if a.cur[i] >= 0 && h < 0 {
			return true
		}
	}
	return false
}

// preemptPass lowers, for each source that Preempts (in priority order), the
// holds of the sources after it toward their lowest steps, lowest priority
// first, as far as needed for its next step up to fit the budget; upPass then
// climbs it (after the dwell, like any upgrade). It does nothing when that
// step fits anyway or not even reclaiming everything makes room.
func (a *Allocator) preemptPass(sources []Source, budget float64) {
	total := 0.0
	for i := range a.hold {
		if a.hold[i] >= 0 {
			total += float64(a.ladders[i][a.hold[i]].rate)
		}
	}
	for pos, i := range a.order {
		lad := a.ladders[i]
		if !sources[i].Preempts || len(lad) == 0 || a.hold[i] >= len(lad)-1 {
			continue
		}
		have := 0.0
		if a.hold[i] >= 0 {
			have = float64(lad[a.hold[i]].rate)
		}
		need := total - have + float64(lad[a.hold[i]+1].rate) - budget
		if need <= 0 {
			continue
		}
		reclaimable := 0.0
		for _, j := range a.order[pos+1:] {
			if a.hold[j] > 0 {
				reclaimable += float64(a.ladders[j][a.hold[j]].rate - a.ladders[j][0].rate)
			}
		}
		if reclaimable < need {
			continue
		}
		for q := len(a.order) - 1; q > pos && need > 0; q-- {
			j := a.order[q]
			for a.hold[j] > 0 && need > 0 {
				drop := float64(a.ladders[j][a.hold[j]].rate - a.ladders[j][a.hold[j]-1].rate)
				a.hold[j]--
				total -= drop
				need -= drop
			}
		}
	}
}

// upPass computes the upgrades the budget allows with the margin, starting from
// the hold allocation: suspended and new sources get their lowest step first,
// then each source in priority order climbs as far as it fits, assuming the
// upgrades of the sources before it happen.
func (a *Allocator) upPass(budget float64) {
	total := 0.0
	for i := range a.up {
		a.up[i] = a.hold[i]
		if a.hold[i] >= 0 {
			total += float64(a.ladders[i][a.hold[i]].rate)
		}
	}
	for _, i := range a.order {
		if a.up[i] < 0 && len(a.ladders[i]) > 0 && total+float64(a.ladders[i][0].rate) <= budget {
			a.up[i] = 0
			total += float64(a.ladders[i][0].rate)
		}
	}
	for _, i := range a.order {
		if a.up[i] < 0 {
			continue
		}
		lad := a.ladders[i]
		have := float64(lad[a.up[i]].rate)
		for k := len(lad) - 1; k > a.up[i]; k-- {
			if total-have+float64(lad[k].rate) <= budget {
				a.up[i] = k
				total += float64(lad[k].rate) - have
				break
			}
		}
	}
}

// decide applies the hysteresis rules to source i and records its new state.
func (a *Allocator) decide(now time.Time, src *Source, i, video int) Allocation {
	st := a.states[src.ID]
	lad := a.ladders[i]
	if len(lad) == 0 {
		// No active encoding (or none at all): nothing to pay for; name the
		// encoding to switch to when one appears.
		st.hasLadder, st.pending, st.enc = false, false, -1
		return Allocation{ID: src.ID, Encoding: src.WantedEncoding(), MaxTemporal: MaxTemporal}
	}
	top := lad[len(lad)-1]
	capRose := st.hasLadder && (top.enc > st.capEnc || top.enc == st.capEnc && top.tl > st.capTL)
	fresh := !st.hasLadder

	k := a.hold[i]
	switch {
	case a.up[i] <= k:
		st.pending = false
	case fresh:
		k = a.up[i] // a new source starts where the budget allows
		st.pending = false
	case capRose && !st.limited && st.dwell == a.cfg.Dwell:
		// The receiver now shows it larger and bandwidth never held it
		// back: no reason to wait.
		k = a.up[i]
		st.pending = false
		st.lastUp, st.upVideo, st.upRate = now, video, lad[k].rate
	default:
		if !st.pending {
			st.pending, st.upSince = true, now
		}
		// The dwell, and after a failed upgrade its back-off counted from the
		// failure: a capacity that came back long after the failure (a cap
		// lifted) is used after the plain dwell, while an upgrade that keeps
		// failing is tried ever more rarely. Counting the back-off from when
		// the upgrade became possible again held a video at 180p for 6 s
		// after a 500 kb/s cap was lifted. Resuming a suspended video never
		// waits for a back-off.
		// A budget well above the one the failed upgrade was made under is
		// new ground, as for a probe (bwe's fresh rule): the failure said
		// nothing about it. Competing downloads fail upgrades at a few
		// hundred kb/s; holding the 3 Mb/s that comes back when they stop
		// for the 30 s back-off kept a browser test's stage off its top
		// layer 24 s after the estimate had recovered.
		due := st.upSince.Add(a.cfg.Dwell)
		if held := st.lastFail.Add(st.dwell); a.cur[i] >= 0 && !st.lastFail.IsZero() && held.After(due) &&
			float64(video) < newGround*float64(st.failVideo) {
			due = held
		}
		if !now.Before(due) {
			k = a.up[i]
			st.pending = false
			if !st.lastFail.IsZero() && float64(video) >= newGround*float64(st.failVideo) {
				// On new ground the old failures' back-off is history: if
				// this upgrade fails too (a top layer's keyframe burst into
				// a 100 ms queue undid one at 3.5 Mb/s beside no traffic),
				// the next try waits 2 × Dwell, not 30 s.
				st.dwell = a.cfg.Dwell
			}
			st.lastUp, st.upVideo, st.upRate = now, video, lad[k].rate
		} else if a.next.IsZero() || due.Before(a.next) {
			a.next = due
		}
	}

	prev := a.cur[i]
	if k < 0 && prev >= 0 {
		// Playing, and the lowest step no longer fits: suspend only when
		// that lasts, a shorter while when the budget is below half of it.
		if st.short.IsZero() {
			st.short = now
		}
		grace := a.cfg.SuspendAfter
		if 2*video < lad[0].rate {
			grace = a.cfg.SuspendFarBelowAfter
		}
		if due := st.short.Add(grace); now.Before(due) {
			k = 0
			if a.next.IsZero() || due.Before(a.next) {
				a.next = due
			}
		}
	} else if k >= 0 {
		st.short = time.Time{}
	}
	if !fresh && k < min(prev, len(lad)-1) && prev >= 0 && !st.lastUp.IsZero() &&
		now.Sub(st.lastUp) < a.cfg.FailWindow && video >= st.upVideo && lad[prev].rate > st.upRate {
		// Soon after an upgrade, with a budget no lower than the one it was
		// made under, the layer's measured rate rose: that is the new layer's
		// keyframe in the measurement, not congestion, which the estimate
		// would show.
		// Measured on a tight link: upgrades undone 0.25 s later, at an
		// unchanged estimate, three times a minute.
		k = prev
	}
	if !fresh && k < min(prev, len(lad)-1) && prev >= 0 {
		// A downgrade for bandwidth. Soon after an upgrade it is a failed upgrade.
		if !st.lastUp.IsZero() && now.Sub(st.lastUp) < a.cfg.FailWindow {
			st.dwell = min(2*st.dwell, a.cfg.MaxDwell)
			st.lastFail, st.failVideo = now, st.upVideo
			st.lastUp = time.Time{} // one failure per upgrade
		}
	}
	if st.dwell > a.cfg.Dwell && !st.lastFail.IsZero() && now.Sub(st.lastFail) >= a.cfg.ResetAfter {
		st.dwell = a.cfg.Dwell
	}

	st.hasLadder = true
	st.capEnc, st.capTL = top.enc, top.tl
	st.limited = k < len(lad)-1
	if k < 0 {
		st.enc, st.tl = -1, 0
		return Allocation{ID: src.ID, Encoding: lad[0].enc, MaxTemporal: lad[0].tl, Suspended: true}
	}
	s := lad[k]
	st.enc, st.tl = s.enc, s.tl
	return Allocation{ID: src.ID, Encoding: s.enc, MaxTemporal: s.tl, Bitrate: s.rate}
}

// locate maps a remembered (encoding, temporal) to the highest ladder step not
// above it; the ladder may have changed since (an encoding stopped).
func locate(lad []step, enc, tl int) int {
	k := -1
	for j, s := range lad {
		if s.enc < enc || s.enc == enc && s.tl <= tl {
			k = j
		}
	}
	if k < 0 {
		return 0 // below the lowest step: hold at the lowest
	}
	return k
}
