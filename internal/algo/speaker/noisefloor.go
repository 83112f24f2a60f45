package speaker

import "math"

// noiseFloor tracks a participant's background noise level as the minimum of
// its non-silent levels. A lower level lowers the floor at once; a floor that
// has become too low (the background got louder) rises only after a whole
// window without a lower level, to the geometric mean of the old floor and the
// window's minimum. The geometric mean rises more slowly than the arithmetic
// one, which suits a minimum tracker: a brief quiet spell must not be undone
// by the next loud minute.
type noiseFloor struct {
	floor     uint8 // 0 until the first non-silent level
	windowMin uint8 // minimum of the current window, 0 when the window is empty
	count     int   // levels in the current window
	window    int
}

func (f *noiseFloor) update(level uint8) {
	if level == 0 {
		// Silence (or injected silence) says nothing about the background
		// noise: a muted sender would otherwise pin the floor at zero.
		return
	}
	if f.floor == 0 || level < f.floor {
		f.floor = level
		f.windowMin, f.count = 0, 0
		return
	}
	if f.windowMin == 0 || level < f.windowMin {
		f.windowMin = level
	}
	f.count++
	if f.count >= f.window {
		f.floor = uint8(math.Sqrt(float64(f.floor) * float64(f.windowMin)))
		f.windowMin, f.count = 0, 0
	}
}
