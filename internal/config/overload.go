package config

import "fmt"

// validateOverload checks the overload thresholds: fractions, underload
// below overload so that shedding and restoring cannot chase each other.
func (c *Config) validateOverload() []error {
	var errs []error
	if c.OverloadCPU <= 0 || c.OverloadCPU > 1 {
		errs = append(errs, fmt.Errorf("overload-cpu: %g; want a fraction of the CPU in (0, 1], e.g. 0.85", c.OverloadCPU))
	}
	if c.UnderloadCPU <= 0 || c.UnderloadCPU >= c.OverloadCPU {
		errs = append(errs, fmt.Errorf("underload-cpu: %g; want a fraction above 0 and below overload-cpu (%g), e.g. 0.6", c.UnderloadCPU, c.OverloadCPU))
	}
	return errs
}
