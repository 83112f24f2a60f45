package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// SettingsBucket holds one key per room: the room's settings as the whole
// conference has them (docs/cluster.md, Room settings across bridges). It is
// the one source of truth: a change is a compare-and-set on the key's
// revision, and every bridge applies the values in revision order from its
// watch, so concurrent changes end with the same value everywhere.
const SettingsBucket = "podium-settings"

// settingsTTL is how long a room's settings outlive the last bridge serving
// it (each serving bridge refreshes the key every settingsTTL/3).
const settingsTTL = 3 * time.Minute

// Setting is a room's settings value at a revision of its key.
type Setting struct {
	Room     string
	Value    []byte
	Revision uint64
	at       time.Time // the revision's creation, for refresh
}

// Settings is this node's view of the settings bucket.
type Settings struct {
	n     *Node
	apply func(Setting)

	ready chan struct{} // closed once the bucket is bound
	kv    jetstream.KeyValue

	mu      sync.Mutex
	view    map[string]Setting
	applied map[string]uint64 // the revision apply last returned from, by room
	wake    chan struct{}     // closed and replaced after each apply
}

// ErrSettingsUnavailable: the bucket is not bound yet (JetStream has no leader).
var ErrSettingsUnavailable = errors.New("cluster: room settings are not available yet (no JetStream leader)")

// WatchSettings binds the settings bucket once the node is ready and calls
// apply for every new revision, in revision order, from one goroutine: the
// only writer of settings to the rooms. served lists the rooms this node
// serves (their keys are refreshed so they outlive no bridge by more than
// settingsTTL).
func (n *Node) WatchSettings(apply func(Setting), served func() []string) *Settings {
	s := &Settings{n: n, apply: apply, ready: make(chan struct{}), view: map[string]Setting{},
		applied: map[string]uint64{}, wake: make(chan struct{})}
	n.wg.Add(1)
	go func() { defer n.wg.Done(); s.run(served) }()
	return s
}

func settingsKey(room string) string { return strings.ReplaceAll(room, ".", "=") }

func (s *Settings) run(served func() []string) {
	select {
	case <-s.n.ctx.Done():
		return
	case <-s.n.ready:
	}
	js, err := jetstream.New(s.n.nc)
	if err != nil {
		return
	}
	var w jetstream.KeyWatcher
	for {
		ctx, cancel := context.WithTimeout(s.n.ctx, 5*time.Second)
		kv, err := s.n.bucket(ctx, js, jetstream.KeyValueConfig{
			Bucket: SettingsBucket, Description: "podium room settings (docs/cluster.md)",
			History: 1, TTL: settingsTTL, LimitMarkerTTL: settingsTTL,
			Storage: jetstream.MemoryStorage, Replicas: s.n.replicas(),
		})
		if err == nil {
			w, err = kv.WatchAll(s.n.ctx)
		}
		cancel()
		if err == nil {
			s.kv = kv
			break
		}
		s.n.log.Debug("cluster: settings bucket", "err", err)
		select {
		case <-s.n.ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	close(s.ready)
	refresh := time.NewTicker(settingsTTL / 6)
	defer refresh.Stop()
	for {
		select {
		case <-s.n.ctx.Done():
			return
		case <-refresh.C:
			s.refresh(served(), time.Now())
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				s.update(e)
			}
		}
	}
}

// update records a revision and applies it (the watch goroutine).
func (s *Settings) update(e jetstream.KeyValueEntry) {
	room := strings.ReplaceAll(e.Key(), "=", ".")
	if e.Operation() != jetstream.KeyValuePut {
		s.mu.Lock()
		delete(s.view, room)
		s.mu.Unlock()
		return
	}
	st := Setting{Room: room, Value: e.Value(), Revision: e.Revision(), at: e.Created()}
	s.mu.Lock()
	old, had := s.view[room]
	if had && old.Revision >= st.Revision { // a redelivery after the watch was recreated
		s.mu.Unlock()
		return
	}
	s.view[room] = st
	s.mu.Unlock()
	if !had || string(old.Value) != string(st.Value) { // not a mere refresh
		s.apply(st)
	}
	s.mu.Lock()
	s.applied[room] = st.Revision
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// refresh writes again, unchanged, the keys of rooms served here that are
// due, so that they do not expire while a bridge serves the room; a
// concurrent change wins (the compare-and-set fails and nothing is lost).
func (s *Settings) refresh(rooms []string, now time.Time) {
	for _, room := range rooms {
		s.mu.Lock()
		st, ok := s.view[room]
		s.mu.Unlock()
		if !ok || now.Sub(st.at) < settingsTTL/3 {
			continue
		}
		ctx, cancel := context.WithTimeout(s.n.ctx, 2*time.Second)
		_, err := s.kv.Update(ctx, settingsKey(room), st.Value, st.Revision)
		cancel()
		if err != nil {
			s.n.log.Debug("cluster: settings refresh", "room", room, "err", err)
		}
	}
}

// Ready is closed once the bucket is bound and watched: from then on this
// node applies every change, its own or another bridge's.
func (s *Settings) Ready() <-chan struct{} { return s.ready }

// Get is the room's settings as last seen (ok false: none set).
func (s *Settings) Get(room string) (Setting, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.view[room]
	return st, ok
}

// Change sets the room's settings to merge(current) by compare-and-set on the
// key's revision, retrying on a concurrent change: current is nil when the
// room has none. It returns the revision written.
func (s *Settings) Change(ctx context.Context, room string, merge func(current []byte) ([]byte, error)) (uint64, error) {
	select {
	case <-s.ready:
	default:
		return 0, ErrSettingsUnavailable
	}
	key := settingsKey(room)
	backoff := 10 * time.Millisecond
	for attempt := 0; attempt < 8; attempt++ {
		if attempt > 0 {
			// A replica's read may lag the write that beat ours: let it catch up.
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("cluster: settings of %s: %w", room, ctx.Err())
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		}
		var cur []byte
		var rev uint64
		e, err := s.kv.Get(ctx, key)
		switch {
		case err == nil:
			cur, rev = e.Value(), e.Revision()
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			return 0, fmt.Errorf("cluster: settings of %s: %w", room, err)
		}
		next, err := merge(cur)
		if err != nil {
			return 0, err
		}
		var wrote uint64
		if rev == 0 {
			wrote, err = s.kv.Create(ctx, key, next)
		} else {
			wrote, err = s.kv.Update(ctx, key, next, rev)
		}
		if err == nil {
			return wrote, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, fmt.Errorf("cluster: settings of %s: %w", room, err)
		}
	}
	return 0, fmt.Errorf("cluster: settings of %s: too many concurrent changes", room)
}

// WaitApplied waits until the room's settings at revision rev or a later one
// have been applied here.
func (s *Settings) WaitApplied(ctx context.Context, room string, rev uint64) error {
	for {
		s.mu.Lock()
		done, wake := s.applied[room] >= rev, s.wake
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: settings of %s revision %d not applied here: %w", room, rev, ctx.Err())
		case <-wake:
		}
	}
}
