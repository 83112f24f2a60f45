package server

import (
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podium-sfu/podium/internal/algo/overload"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/gridclock"
	"github.com/podium-sfu/podium/internal/procs"
	"github.com/podium-sfu/podium/internal/room"
)

// overloadInterval is how often the node's load is sampled.
const overloadInterval = time.Second

// overloadParts is the sampler that applies the overload controller's
// decisions (docs/scale.md "Overload"): its goroutine alone owns the
// controller; the atomics are what /metrics reads.
type overloadParts struct {
	ctrl     *overload.Controller
	cpu      func(now time.Time) (float64, time.Duration) // CPU fraction since the last call, and that span (0: unknown)
	interval time.Duration
	cores    float64                     // what a CPU fraction of 1 is (0: an injected CPU reading)
	applied  map[*room.Room]overload.Cap // the ceiling each room was last given

	load     atomic.Uint64 // math.Float64bits of the smoothed CPU fraction
	levels   [overload.Floor + 1]atomic.Int64
	shed     atomic.Uint64 // steps down
	restored atomic.Uint64 // steps up
}

// newOverload returns nil when overload protection is off.
func newOverload(cfg config.Config, opts Options) *overloadParts {
	if !cfg.Overload {
		return nil
	}
	c := overload.DefaultConfig()
	if opts.OverloadTiming != nil {
		c = *opts.OverloadTiming
	}
	c.Overuse, c.Underuse = cfg.OverloadCPU, cfg.UnderloadCPU
	o := &overloadParts{ctrl: overload.New(c), interval: overloadInterval,
		applied: map[*room.Room]overload.Cap{}}
	if opts.CPU != nil {
		o.cpu = func(now time.Time) (float64, time.Duration) { return opts.CPU(now), 0 }
	} else {
		o.cores = usableCores()
		o.cpu = processShare(o.cores)
	}
	if opts.OverloadInterval > 0 {
		o.interval = opts.OverloadInterval
	}
	return o
}

// runOverload samples until stop is called; stop waits for the sampler.
func (s *Server) runOverload() (stop func()) {
	o := s.overload
	if o == nil {
		return func() {}
	}
	s.log.Info("overload protection on", "cores", round2(o.cores), "overloadCPU", s.cfg.OverloadCPU, "underloadCPU", s.cfg.UnderloadCPU)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// On the interval's grid, where the shared clock's rounds fall
		// too: no wake-up of its own.
		gridclock.Every(quit, o.interval, func() { o.sample(time.Now(), s.hub, s.log) })
	}()
	return func() { close(quit); <-done }
}

// sample feeds one measurement to the controller and applies what it decided:
// each room's ceiling, and whether the hub admits new participants.
func (o *overloadParts) sample(now time.Time, hub *room.Hub, log *slog.Logger) {
	// No send-drop input: the only counters (/proc/net/snmp SndbufErrors)
	// are the host's, and a shaped or lossy link made other processes'
	// refusals shed every room of an idle server (CI's shaped tests).
	cpu, span := o.cpu(now)
	smp := overload.Sample{At: now, CPU: cpu, Span: span}
	live := hub.Rooms()
	rooms := make([]overload.Room, 0, len(live))
	byID := make(map[string]*room.Room, len(live))
	for _, r := range live {
		if info, ok := r.OverloadInfo(); ok {
			rooms = append(rooms, info)
			byID[info.ID] = r
		}
	}
	ch := o.ctrl.Observe(smp, rooms)
	o.load.Store(math.Float64bits(o.ctrl.Load()))
	for _, st := range ch.Steps {
		verb := "overload: shedding video"
		if st.To < st.From {
			verb = "overload: restoring video"
			o.restored.Add(1)
		} else {
			o.shed.Add(1)
		}
		log.Info(verb, "room", st.Room, "level", st.To, "lastNCap", st.Cap.LastN, "maxHeight", st.Cap.MaxHeight,
			"cpu", round2(o.ctrl.Load()))
	}
	if ch.AdmitChanged {
		hub.SetBusy(!o.ctrl.Admit())
		if o.ctrl.Admit() {
			log.Info("overload: admitting new participants again", "cpu", round2(o.ctrl.Load()))
		} else {
			log.Warn("overload: every room is audio only and the server is still overused; refusing new participants (server-busy)",
				"cpu", round2(o.ctrl.Load()))
		}
	}
	var levels [len(o.levels)]int64
	for id, r := range byID {
		levels[o.ctrl.Level(id)]++
		c := o.ctrl.Cap(id)
		if prev, ok := o.applied[r]; ok && prev == c || !ok && c == overload.None {
			continue
		}
		r.Shed(c)
		o.applied[r] = c
	}
	for r := range o.applied {
		if byID[r.Name()] != r {
			delete(o.applied, r) // ended
		}
	}
	for l := range levels {
		o.levels[l].Store(levels[l])
	}
}

// processShare returns the process's CPU time since the previous call as a
// fraction of cores, and the wall time that covers: the first call's may be
// a few milliseconds (the samplers tick on a shared grid).
func processShare(cores float64) func(now time.Time) (float64, time.Duration) {
	last, lastAt := procs.CPUTime(), time.Now()
	return func(now time.Time) (float64, time.Duration) {
		cpu, wall := procs.CPUTime(), now.Sub(lastAt)
		used := cpu - last
		last, lastAt = cpu, now
		if wall <= 0 || used < 0 {
			return 0, 0
		}
		return used.Seconds() / wall.Seconds() / cores, wall
	}
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// overloadCollector exposes what the overload protection does on /metrics.
type overloadCollector struct{ s *Server }

var (
	overloadCPUDesc = desc("podium_overload_cpu",
		"The server's smoothed CPU use as a fraction of its cores, as the overload protection sees it.")
	overloadRoomsDesc = desc("podium_overload_rooms",
		"Rooms at each shedding level above 0 (docs/scale.md: 1 no 720p, 2-3 Last N 6 and 4, 4 180p only, 5-6 Last N 2 and 1, 7 audio only).", "level")
	overloadStepsDesc = desc("podium_overload_steps_total",
		"Steps of the overload protection: a room's video shed by one level, or restored by one.", "direction")
	overloadBusyDesc = desc("podium_overload_refusing",
		"1 while new joins are refused with server-busy: every room is audio only and the server still overused.")
)

func (c overloadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{overloadCPUDesc, overloadRoomsDesc, overloadStepsDesc, overloadBusyDesc} {
		ch <- d
	}
}

func (c overloadCollector) Collect(ch chan<- prometheus.Metric) {
	o := c.s.overload
	if o == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(overloadCPUDesc, prometheus.GaugeValue, math.Float64frombits(o.load.Load()))
	for l := 1; l <= overload.Floor; l++ {
		ch <- prometheus.MustNewConstMetric(overloadRoomsDesc, prometheus.GaugeValue, float64(o.levels[l].Load()), strconv.Itoa(l))
	}
	ch <- prometheus.MustNewConstMetric(overloadStepsDesc, prometheus.CounterValue, float64(o.shed.Load()), "shed")
	ch <- prometheus.MustNewConstMetric(overloadStepsDesc, prometheus.CounterValue, float64(o.restored.Load()), "restore")
	ch <- prometheus.MustNewConstMetric(overloadBusyDesc, prometheus.GaugeValue, b2f(c.s.hub.Busy()))
}
