// Package prefetch asks the processor to start loading memory a loop will
// touch soon, so that a cache miss overlaps work instead of stalling it.
//
// The fan-out walks one destination's state after another, and on a busy box
// each destination's lines are cold by its next packet (docs/performance.md,
// "Prefetching the next destination"). A load of the next destination's state
// would stall where it is issued; a prefetch does not.
package prefetch
