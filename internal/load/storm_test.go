package load

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestJoinStorm: while two publishers and a receiver meet, a storm of
// audience joins hits their room, more than it admits (max-participants):
// every join is answered within 30 s — welcome then media, or room-full —
// none hangs, and the participants already there lose < 1 % of their packets
// during the storm.
// PODIUM_STORM=300 runs the full storm (300 joins within 30 s,
// docs/scale.md); by default 30 joins within 5 s keep it short under -race.
func TestJoinStorm(t *testing.T) {
	joins, within := 30, 5*time.Second
	if n, err := strconv.Atoi(os.Getenv("PODIUM_STORM")); err == nil && n > 0 {
		joins, within = n, time.Duration(n)*100*time.Millisecond
	}
	existing := 3
	limit := existing + joins*2/3 // a third of the storm is refused
	url, _ := startServer(t, func(c *config.Config) {
		c.JoinsPerIP, c.MaxParticipants, c.MaxConnsPerIP, c.SignalingRate = 0, limit, 0, 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), within+90*time.Second)
	defer cancel()
	view := View{Width: 320, Height: 180}
	r, err := Start(ctx, Config{URL: url, Room: "storm", Seed: 1, Speech: SpeechRealistic,
		Participants: append(Group("pub", 2, ParticipantSpec{Audio: true, Video: VideoSingle, Clips: []string{clip.Video180p}, View: view}),
			Group("rcv", existing-2, ParticipantSpec{View: view})...)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.WaitJoined(ctx); err != nil {
		t.Fatal(err)
	}
	// Media flowing everywhere before the storm: 2 receivers of each publisher, 2 of the receiver's.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if tot := r.Totals(); tot.RxAudioStreams == 4 && tot.RxVideoStreams == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("before the storm: %+v (last error %q)", r.Totals(), r.LastError())
		}
	}
	before := r.Totals()
	res := Storm(ctx, StormConfig{URL: url, Room: "storm", Joins: joins, Within: within, JoinTimeout: 30 * time.Second, MediaTimeout: 30 * time.Second})
	defer res.Close()
	time.Sleep(2 * time.Second) // what the storm delayed arrives, or counts as lost
	w := Between(r.Started(), before, r.Totals())
	t.Logf("storm of %d joins within %v: %s", joins, within, res)
	t.Logf("existing participants during the storm:\n%s", w.Summary())
	if len(res.Hung) > 0 {
		t.Errorf("%d joins hung: %v", len(res.Hung), res.Hung[:min(3, len(res.Hung))])
	}
	if want := limit - existing; res.Admitted != want {
		t.Errorf("%d admitted, want %d (the room's limit)", res.Admitted, want)
	}
	if res.Refused[signal.CodeRoomFull] != joins-(limit-existing) || len(res.Refused) != 1 {
		t.Errorf("refused %v, want %d room-full", res.Refused, joins-(limit-existing))
	}
	if res.Took > within+30*time.Second {
		t.Errorf("the storm took %v to be answered", res.Took)
	}
	if w.LossPercent >= 1 {
		t.Errorf("existing participants lost %.2f %% during the storm", w.LossPercent)
	}
	if w.Reconnects > 0 {
		t.Errorf("%d existing participants reconnected during the storm", w.Reconnects)
	}
}
