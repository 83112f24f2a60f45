package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/podium-sfu/podium/internal/client"
)

// StormConfig is a join storm: Joins receive-only participants (audience)
// joining one room, spread evenly over Within.
type StormConfig struct {
	URL, Room, Token string
	Joins            int
	Within           time.Duration
	// JoinTimeout is how long a join may take to be answered (welcome or a
	// refusal) before it counts as hung; MediaTimeout how long after welcome
	// its first media packet may take.
	JoinTimeout, MediaTimeout time.Duration
}

// StormResult is what became of every join of a storm.
type StormResult struct {
	Admitted int
	Refused  map[string]int // by error code
	// Hung lists the joins answered neither with welcome nor with an error
	// within JoinTimeout, or admitted without media within MediaTimeout.
	Hung                    []string
	SlowestJoin, MedianJoin time.Duration // of the admitted: dial to welcome
	SlowestMedia            time.Duration // of the admitted: welcome to first packet
	Took                    time.Duration // first dial to last answer

	clients []*client.Client
}

// Close makes the storm's admitted participants leave.
func (r *StormResult) Close() {
	for _, c := range r.clients {
		c.Close()
	}
	r.clients = nil
}

// String is the result in one line.
func (r *StormResult) String() string {
	codes := make([]string, 0, len(r.Refused))
	for c, n := range r.Refused {
		codes = append(codes, fmt.Sprintf("%d %s", n, c))
	}
	sort.Strings(codes)
	refused := "none"
	if len(codes) > 0 {
		refused = strings.Join(codes, ", ")
	}
	return fmt.Sprintf("%d admitted (join median %s, slowest %s; first media at most %s after welcome), refused: %s, hung: %d, all answered within %s",
		r.Admitted, r.MedianJoin.Round(time.Millisecond), r.SlowestJoin.Round(time.Millisecond),
		r.SlowestMedia.Round(time.Millisecond), refused, len(r.Hung), r.Took.Round(time.Millisecond))
}

// Storm runs a join storm and returns once every join was answered (or
// counted as hung). The admitted participants stay until Close.
func Storm(ctx context.Context, cfg StormConfig) *StormResult {
	res := &StormResult{Refused: map[string]int{}}
	var mu sync.Mutex
	var joins []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	gap := cfg.Within / time.Duration(max(cfg.Joins, 1))
	for i := range cfg.Joins {
		if i > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(gap):
			}
		}
		name := fmt.Sprintf("storm-%d", i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, took, media, err := stormJoin(ctx, cfg, name)
			mu.Lock()
			defer mu.Unlock()
			var refused *client.RefusedError
			switch {
			case errors.As(err, &refused):
				res.Refused[refused.Refusal.Code]++
			case err != nil:
				res.Hung = append(res.Hung, fmt.Sprintf("%s: %v", name, err))
			default:
				res.Admitted++
				res.clients = append(res.clients, c)
				joins = append(joins, took)
				res.SlowestMedia = max(res.SlowestMedia, media)
			}
		}()
	}
	wg.Wait()
	res.Took = time.Since(start)
	slices.Sort(joins)
	if len(joins) > 0 {
		res.MedianJoin, res.SlowestJoin = joins[len(joins)/2], joins[len(joins)-1]
	}
	return res
}

// stormJoin joins one audience participant and waits for its first packet.
func stormJoin(ctx context.Context, cfg StormConfig, name string) (*client.Client, time.Duration, time.Duration, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.JoinTimeout)
	defer cancel()
	t0 := time.Now()
	c, err := client.Dial(dctx, client.Options{URL: cfg.URL, Room: cfg.Room, Name: name, Token: cfg.Token, Audience: true})
	if err != nil {
		return nil, 0, 0, err
	}
	took := time.Since(t0)
	mctx, cancel2 := context.WithTimeout(ctx, cfg.MediaTimeout)
	defer cancel2()
	t1 := time.Now()
	err = c.Wait(mctx, func(s *client.State) bool {
		for _, t := range s.Tracks {
			if t.Packets > 0 {
				return true
			}
		}
		return s.Closed != nil
	})
	if st := c.Snapshot(); err != nil || st.Closed != nil {
		c.Close()
		return nil, 0, 0, fmt.Errorf("admitted after %v but no media within %v (closed: %v)", took.Round(time.Millisecond), cfg.MediaTimeout, st.Closed)
	}
	return c, took, time.Since(t1), nil
}
