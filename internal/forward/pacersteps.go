package forward

import "time"

// pacerSteps is a Link as the shared clock steps it (gridclock.Shared): the
// pacer step of every Link on one goroutine, on the idleTick and probeTick
// grids, rather than a timer per receiver connection.
type pacerSteps Link

func (p *pacerSteps) Step(now time.Time) (time.Duration, bool) {
	return (*Link)(p).tick(now), true
}

// StepPanicked hands the panic to the Link's Run, on its connection's
// goroutine.
func (p *pacerSteps) StepPanicked(r any) {
	select {
	case p.stepPanic <- r:
	default:
	}
}
