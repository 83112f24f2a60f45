package relay

import (
	"crypto/cipher"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// Drop is why a datagram was not accepted.
type Drop int

const (
	Accepted   Drop = iota
	Malformed       // not a datagram of this format
	UnknownKey      // no key of that sender and id (or retired)
	Forged          // did not authenticate under the key it names
	Replayed        // counter seen already, or too old for the window
)

func (d Drop) String() string {
	return [...]string{"accepted", "malformed", "unknown_key", "forged", "replayed"}[d]
}

// peerKey is another node's key as this node opens with it.
type peerKey struct {
	node   string
	sender uint32
	id     uint32
	aead   cipher.AEAD
	retire atomic.Int64 // unix nanos from which it is refused; 0: in use
	win    Window       // owned by the opener (one goroutine)
}

// Peers are the keys of the other nodes. Lookups (one per datagram) read a
// copy-on-write map; Learn and Forget, rare, replace it under mu.
type Peers struct {
	grace time.Duration // how long a key is accepted once a newer one is known
	keys  atomic.Pointer[map[uint64]*peerKey]
	mu    sync.Mutex
	// learnt holds every key ever added (under mu): a retired key that a
	// sender still announces is not taken again. A few entries per
	// rotation; a sender's go when none of its keys is left.
	learnt map[uint64]bool
}

// NewPeers makes an empty table; a key stays accepted for grace after a newer
// key of the same sender is learnt.
func NewPeers(grace time.Duration) *Peers {
	p := &Peers{grace: grace, learnt: map[uint64]bool{}}
	p.keys.Store(&map[uint64]*peerKey{})
	return p
}

func keyOf(sender, id uint32) uint64 { return uint64(sender)<<32 | uint64(id) }

// newer: key id a is after b in serial-number order (ids wrap).
func newer(a, b uint32) bool { return int32(a-b) > 0 }

// Learn adds node's keys (sender tag, ids) at now. Keys already known are kept
// as they are (with their replay windows); older keys of the sender are
// retired after the grace period, and retired keys past it are dropped.
func (p *Peers) Learn(now time.Time, node string, sender uint32, keys []Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := *p.keys.Load()
	next := make(map[uint64]*peerKey, len(old)+len(keys))
	newest, have := uint32(0), false
	for _, k := range old {
		if k.sender == sender && (!have || newer(k.id, newest)) {
			newest, have = k.id, true
		}
	}
	for _, k := range keys {
		if !have || newer(k.ID, newest) {
			newest, have = k.ID, true
		}
	}
	for id, k := range old {
		if r := k.retire.Load(); r != 0 && now.UnixNano() >= r {
			continue
		}
		next[id] = k
	}
	for _, k := range keys {
		if p.learnt[keyOf(sender, k.ID)] {
			continue
		}
		aead, err := newAEAD(k.Raw)
		if err != nil {
			continue
		}
		next[keyOf(sender, k.ID)] = &peerKey{node: node, sender: sender, id: k.ID, aead: aead}
		p.learnt[keyOf(sender, k.ID)] = true
	}
	live := map[uint32]bool{}
	for _, k := range next {
		live[k.sender] = true
	}
	for id := range p.learnt {
		if !live[uint32(id>>32)] {
			delete(p.learnt, id)
		}
	}
	for _, k := range next {
		// A node that restarted has a new tag: the old tag's keys go too.
		stale := k.sender != sender && k.node == node
		if (k.sender == sender && k.id != newest || stale) && k.retire.Load() == 0 {
			k.retire.Store(now.Add(p.grace).UnixNano())
		}
	}
	p.keys.Store(&next)
}

// Node names the node that announced sender (ok false: unknown).
func (p *Peers) Node(sender uint32) (string, bool) {
	for _, k := range *p.keys.Load() {
		if k.sender == sender {
			return k.node, true
		}
	}
	return "", false
}

// Open authenticates and decrypts the datagram b in place at now. On Accepted
// it returns the header, the stream id and the body (a slice of b). One
// goroutine opens (the replay windows are its own).
func (p *Peers) Open(now time.Time, b []byte, h *Header) (stream uint32, body []byte, drop Drop) {
	if Parse(b, h) != nil {
		return 0, nil, Malformed
	}
	k := (*p.keys.Load())[keyOf(h.Sender, h.KeyID)]
	if k == nil {
		return 0, nil, UnknownKey
	}
	if r := k.retire.Load(); r != 0 && now.UnixNano() >= r {
		return 0, nil, UnknownKey
	}
	if !k.win.Check(h.Counter) {
		return 0, nil, Replayed
	}
	pt, err := k.aead.Open(b[HeaderLen:HeaderLen], nonce(b), b[HeaderLen:], b[:HeaderLen])
	if err != nil {
		return 0, nil, Forged
	}
	k.win.Accept(h.Counter)
	return binary.BigEndian.Uint32(pt), pt[streamLen:], Accepted
}
