package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/podium-sfu/podium/internal/load"
)

// SaturationLoss is the receivers' loss (after retransmission) at which a
// load no longer counts as held.
const SaturationLoss = 0.5

// SaturationStep is one load of a saturation run: the scenario k times over
// (load.Replicate), measured with its floor.
type SaturationStep struct {
	Copies int
	Result ForwardResult
	Held   bool   // loss below SaturationLoss and the scenario held
	Why    string // why it did not hold
}

// Saturate raises the load, one more copy of the scenario (its publishers and
// receivers, in a room of their own) per step, until the receivers lose
// SaturationLoss % or more or the scenario stops holding (the SFU falls
// behind: layers drop, forwarding falls short of nominal), or maxCopies. The
// first step has first copies (at least 1: the loads known to hold need not be
// run again). Each step is a Forward run with o's durations, floor included.
// It returns every step; Highest picks the result.
func Saturate(ctx context.Context, o ForwardOptions, first, maxCopies int, each func(SaturationStep)) ([]SaturationStep, error) {
	base, err := load.StandardScenario(o.Scenario)
	if o.Custom != nil {
		base, err = *o.Custom, nil
	}
	if err != nil {
		return nil, err
	}
	var steps []SaturationStep
	for k := max(first, 1); k <= maxCopies; k++ {
		sc := load.Replicate(base, k)
		so := o
		so.Custom = &sc
		res, err := Forward(ctx, so)
		step := SaturationStep{Copies: k, Result: res}
		var held *ScenarioError
		switch {
		case errors.As(err, &held):
			step.Why = fmt.Sprintf("the scenario did not hold (%d of %d streams held)", held.Verdict.Held, held.Verdict.Streams)
			if len(held.Verdict.Problems) > 0 {
				step.Why += ": " + held.Verdict.Problems[0]
			}
		case err != nil:
			return steps, fmt.Errorf("%d copies: %w", k, err)
		case res.Load.LossPercent >= SaturationLoss:
			step.Why = fmt.Sprintf("receivers lost %.2f %%", res.Load.LossPercent)
		default:
			step.Held = true
		}
		steps = append(steps, step)
		if each != nil {
			each(step)
		}
		if !step.Held {
			break
		}
	}
	return steps, nil
}

// Highest is the step with the most forwarded packets per second among those
// held (false when none held).
func Highest(steps []SaturationStep) (SaturationStep, bool) {
	var best SaturationStep
	found := false
	for _, s := range steps {
		if s.Held && (!found || s.Result.PacketsPerS > best.Result.PacketsPerS) {
			best, found = s, true
		}
	}
	return best, found
}

// SaturationLine is a saturation run's result as one key=value line.
func SaturationLine(scenario string, steps []SaturationStep) string {
	best, ok := Highest(steps)
	last := steps[len(steps)-1]
	if !ok {
		return fmt.Sprintf("scenario=%s saturation_copies=0 saturation_pkts_per_s=0 saturation_x_floor=0 last_copies=%d last_loss_pct=%.3f saturated=%t",
			scenario, last.Copies, last.Result.Load.LossPercent, !last.Held)
	}
	r := best.Result
	return fmt.Sprintf("scenario=%s saturation_copies=%d saturation_pkts_per_s=%.0f saturation_mbit_per_s=%.2f saturation_loss_pct=%.3f "+
		"saturation_cpu_us_per_pkt=%.2f saturation_floor_us_per_pkt=%.2f saturation_x_floor=%.2f saturation_sfu_cpu_pct=%.1f saturation_load_cpu_pct=%.1f "+
		"last_copies=%d last_loss_pct=%.3f saturated=%t",
		scenario, best.Copies, r.PacketsPerS, r.MbitPerS, r.Load.LossPercent, r.CPUMicros, r.Floor.CPUMicros, r.XFloor, r.CPUPercent, r.LoadCPUPercent,
		last.Copies, last.Result.Load.LossPercent, !last.Held)
}
