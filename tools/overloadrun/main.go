// Command overloadrun drives a running Podium server past its capacity with
// synthetic participants (internal/load) added in steps, then takes them away
// again, and prints once a second what the overload protection did: the
// server's CPU, the videos each receiver gets (Last N as applied), the rooms'
// shedding levels, and the audio loss receivers see. docs/scale.md "Overload"
// shows a run and its command.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

type step struct {
	room       string
	publishers int
}

// row is one second of the run.
type row struct {
	t          float64
	cpu        float64 // process CPU of the server over the second, fraction of its cores
	smoothed   float64 // podium_overload_cpu
	videos     float64 // videos per receiver, mean
	levels     string  // rooms per shedding level
	audioLoss  float64 // percent of audio sequence numbers missed over the second
	videoPkts  float64 // video packets received per second, all receivers
	joined     int
	refusing   bool
	lastErrors string
}

func main() {
	url := flag.String("url", "ws://127.0.0.1:7880/ws", "the server's signaling WebSocket")
	metrics := flag.String("metrics", "http://127.0.0.1:7880/metrics", "the server's /metrics")
	cores := flag.Float64("server-cores", 1, "cores the server may use (its CPU is reported as a fraction of them)")
	stepsFlag := flag.String("steps", "a:4,b:4,a:4,c:4,b:4", "participants added, one ROOM:PUBLISHERS group per step")
	every := flag.Duration("every", 20*time.Second, "time between steps, up and down")
	hold := flag.Duration("hold", 40*time.Second, "time at full load before taking steps away")
	tail := flag.Duration("tail", 60*time.Second, "time after the last step is taken away")
	view := flag.String("view", "1280x720", "how everyone shows the others' videos, WxH")
	dtx := flag.Bool("dtx", true, "Opus DTX: silent participants send one packet per 400 ms")
	cpuTop := flag.Float64("chart-cpu", 1, "the CPU fraction at the top of the chart")
	replay := flag.String("chart", "", "only chart the rows of an earlier run's output in this file")
	flag.Parse()
	if *replay != "" {
		rows, err := readRows(*replay)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		chart(rows, *cpuTop)
		return
	}
	var v load.View
	if _, err := fmt.Sscanf(*view, "%dx%d", &v.Width, &v.Height); err != nil {
		fmt.Fprintf(os.Stderr, "--view %q: want WIDTHxHEIGHT\n", *view)
		os.Exit(2)
	}
	steps, err := parseSteps(*stepsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(*url, *metrics, *cores, steps, *every, *hold, *tail, v, *dtx, *cpuTop); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parseSteps(s string) ([]step, error) {
	var out []step
	for _, part := range strings.Split(s, ",") {
		room, n, ok := strings.Cut(part, ":")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k <= 0 || room == "" {
			return nil, fmt.Errorf("--steps: %q is not ROOM:PUBLISHERS", part)
		}
		out = append(out, step{room, k})
	}
	return out, nil
}

func run(url, metricsURL string, cores float64, steps []step, every, hold, tail time.Duration, view load.View, dtx bool, cpuTop float64) error {
	ctx := context.Background()
	var runs []*load.Run
	defer func() {
		for _, r := range runs {
			r.Close()
		}
	}()
	start := time.Now()
	// The schedule: step i starts at i×every; after hold at full load the
	// steps end in reverse, one per every; then tail.
	up := time.Duration(len(steps)-1) * every
	downAt := func(i int) time.Duration { return up + hold + time.Duration(len(steps)-1-i)*every }
	end := downAt(0) + tail
	started, stopped := 0, make([]bool, len(steps))
	lastCPU, lastAt := scrape(metricsURL)["process_cpu_seconds_total"], time.Now()
	prev := map[string][2]uint64{}
	var rows []row
	fmt.Printf("%6s %6s %6s %7s %-17s %8s %9s %7s %s\n", "t", "cpu", "avg", "videos", "levels 1..7", "aloss%", "video pps", "joined", "")
	for tick := time.NewTicker(time.Second); ; <-tick.C {
		el := time.Since(start)
		for started < len(steps) && el >= time.Duration(started)*every {
			st := steps[started]
			cfg := load.Config{URL: url, Room: st.room, Seed: uint64(started + 1), Speech: load.SpeechRealistic, DTX: dtx,
				Participants: load.Group(fmt.Sprintf("s%d", started+1), st.publishers,
					load.ParticipantSpec{Audio: true, Video: load.VideoSimulcast, View: view})}
			r, err := load.Start(ctx, cfg)
			if err != nil {
				return fmt.Errorf("step %d: %w", started+1, err)
			}
			runs = append(runs, r)
			started++
		}
		for i := range runs {
			if !stopped[i] && el >= downAt(i) {
				runs[i].Close()
				stopped[i] = true
			}
		}
		m := scrape(metricsURL)
		now := time.Now()
		rw := row{t: el.Seconds(), smoothed: m["podium_overload_cpu"], refusing: m["podium_overload_refusing"] == 1}
		rw.cpu = (m["process_cpu_seconds_total"] - lastCPU) / now.Sub(lastAt).Seconds() / cores
		lastCPU, lastAt = m["process_cpu_seconds_total"], now
		var levels []string
		for l := 1; l <= 7; l++ {
			levels = append(levels, strconv.Itoa(int(m[fmt.Sprintf(`podium_overload_rooms{level="%d"}`, l)])))
		}
		rw.levels = strings.Join(levels, ",")
		var expected, missed, videoPkts uint64
		receivers, videos := map[string]bool{}, 0
		var errs []string
		for i, r := range runs {
			if stopped[i] {
				continue
			}
			for _, s := range r.Streams() {
				k := fmt.Sprint(i, s.Receiver, s.Source, s.Kind)
				p := prev[k]
				prev[k] = [2]uint64{s.Expected, s.Received}
				if s.Kind == "audio" {
					if de, dr := s.Expected-p[0], s.Received-p[1]; de > dr {
						expected += de
						missed += de - dr
					} else {
						expected += de
					}
				} else {
					videoPkts += s.Packets - p[1]
					prev[k] = [2]uint64{s.Expected, s.Packets}
				}
			}
			for _, rc := range r.Receptions() {
				receivers[fmt.Sprint(i, rc.Receiver)] = true
				if rc.Kind == "video" {
					videos++
				}
			}
			if e := r.LastError(); e != "" {
				errs = append(errs, e)
			}
		}
		rw.joined = len(receivers)
		if len(receivers) > 0 {
			rw.videos = float64(videos) / float64(len(receivers))
		}
		if expected > 0 {
			rw.audioLoss = 100 * float64(missed) / float64(expected)
		}
		rw.videoPkts = float64(videoPkts)
		rw.lastErrors = strings.Join(errs, "; ")
		rows = append(rows, rw)
		busy := ""
		if rw.refusing {
			busy = "refusing joins"
		}
		if rw.lastErrors != "" {
			busy += " " + rw.lastErrors
		}
		fmt.Printf("%5.0fs %6.2f %6.2f %7.2f %-17s %8.2f %9.0f %7d %s\n", rw.t, rw.cpu, rw.smoothed, rw.videos, rw.levels,
			rw.audioLoss, rw.videoPkts, rw.joined, busy)
		if el >= end {
			break
		}
	}
	chart(rows, cpuTop)
	return nil
}

// readRows reads the per-second lines an earlier run printed.
func readRows(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rw row
		var t string
		if n, _ := fmt.Sscanf(sc.Text(), "%s %f %f %f %s %f %f %d", &t, &rw.cpu, &rw.smoothed, &rw.videos, &rw.levels, &rw.audioLoss, &rw.videoPkts, &rw.joined); n < 8 {
			continue
		}
		if rw.t, err = strconv.ParseFloat(strings.TrimSuffix(t, "s"), 64); err != nil {
			continue
		}
		rows = append(rows, rw)
	}
	return rows, sc.Err()
}

// scrape reads the numeric samples of /metrics by name{labels}.
func scrape(url string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(url)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// chart prints CPU, videos per receiver and audio loss over time, one column
// per 5 s until the last participant left: C the server's CPU (0 to cpuTop in
// ten rows), N videos per receiver (0-5 in rows of 0.5); in the bottom row L
// for audio loss of 1 % or more, 0 for audio only.
func chart(rows []row, cpuTop float64) {
	const height = 10
	for len(rows) > 0 && rows[len(rows)-1].joined == 0 {
		rows = rows[:len(rows)-1]
	}
	if len(rows) == 0 {
		return
	}
	var cols []row
	for i := 0; i < len(rows); i += 5 {
		agg := row{t: rows[i].t}
		n := 0
		for j := i; j < len(rows) && j < i+5; j++ {
			agg.cpu += rows[j].cpu
			agg.videos += rows[j].videos
			agg.audioLoss = max(agg.audioLoss, rows[j].audioLoss)
			n++
		}
		agg.cpu /= float64(n)
		agg.videos /= float64(n)
		cols = append(cols, agg)
	}
	fmt.Println()
	fmt.Println("C: server CPU (left scale, fraction of its cores), N: videos per receiver (right scale); one column per 5 s")
	fmt.Println("cpu")
	for lvl := height; lvl >= 1; lvl-- {
		var b strings.Builder
		fmt.Fprintf(&b, "%4.2f |", cpuTop*float64(lvl)/height)
		for _, c := range cols {
			cpuHere := int(c.cpu/cpuTop*height+0.5) == lvl
			nHere := int(c.videos*2+0.5) == lvl
			switch {
			case cpuHere && nHere:
				b.WriteByte('*')
			case cpuHere:
				b.WriteByte('C')
			case nHere:
				b.WriteByte('N')
			default:
				b.WriteByte(' ')
			}
		}
		fmt.Fprintf(&b, "| %3.1f", float64(lvl)/2)
		fmt.Println(b.String())
	}
	var loss strings.Builder
	for _, c := range cols {
		if c.audioLoss >= 1 {
			loss.WriteByte('L')
		} else if c.videos < 0.25 {
			loss.WriteByte('0')
		} else {
			loss.WriteByte('.')
		}
	}
	fmt.Printf("     |%s| L: audio loss >= 1 %% in the 5 s; 0: audio only (no video)\n", loss.String())
	fmt.Printf("     0s%*s%.0fs\n", max(len(cols)-4, 1), "", cols[len(cols)-1].t)
}
