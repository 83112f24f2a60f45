package relay

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// KeyLen is an AES-128 key.
const KeyLen = 16

// Key is one sending key of one node, as announced to the others.
type Key struct {
	ID  uint32 `json:"id"`
	Raw []byte `json:"key"`
}

// sendKey is a key this node seals with.
type sendKey struct {
	Key
	aead    cipher.AEAD
	counter atomic.Uint64 // last counter used
}

func newAEAD(raw []byte) (cipher.AEAD, error) {
	if len(raw) != KeyLen {
		return nil, errors.New("relay: bad key length")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func newSendKey(id uint32) *sendKey {
	raw := make([]byte, KeyLen)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	aead, _ := newAEAD(raw)
	return &sendKey{Key: Key{ID: id, Raw: raw}, aead: aead}
}

// seal writes a datagram of kind for stream and body into dst (which must
// hold len(body)+Overhead bytes) and returns it. Safe for concurrent use.
func (k *sendKey) seal(dst []byte, sender uint32, kind Kind, stream uint32, body []byte) []byte {
	h := Header{Kind: kind, Sender: sender, KeyID: k.ID, Counter: k.counter.Add(1)}
	putHeader(dst, &h)
	binary.BigEndian.PutUint32(dst[HeaderLen:], stream)
	n := HeaderLen + streamLen + copy(dst[HeaderLen+streamLen:], body)
	// In place: the plaintext's storage takes the ciphertext.
	ct := k.aead.Seal(dst[HeaderLen:HeaderLen], nonce(dst), dst[HeaderLen:n], dst[:HeaderLen])
	return dst[:HeaderLen+len(ct)]
}

// Keyring holds this node's sending keys: the one in use, the next one
// (announced before it is used, so that the others have it when the first
// datagram under it arrives) and the previous one (still announced while the
// others may hold datagrams sealed with it).
type Keyring struct {
	sender uint32
	lead   time.Duration // how long a new key is announced before use

	active atomic.Pointer[sendKey]
	nextAt atomic.Int64 // unix nanos when next becomes active; 0: no next

	mu   sync.Mutex // guards next, prev and rotations (never held to seal)
	next *sendKey
	prev *sendKey
}

// NewKeyring makes a ring with a random sender tag and a first key.
func NewKeyring(lead time.Duration) *Keyring {
	var b [8]byte
	_, _ = rand.Read(b[:])
	r := &Keyring{sender: binary.BigEndian.Uint32(b[:4]), lead: lead}
	// A random first id: a restarted node's keys are not confused with its
	// predecessor's by receivers that still hold those.
	r.active.Store(newSendKey(binary.BigEndian.Uint32(b[4:])))
	return r
}

// Sender is this node's relay tag.
func (r *Keyring) Sender() uint32 { return r.sender }

// current is the key to seal with at now, promoting the next key when due.
func (r *Keyring) current(now time.Time) *sendKey {
	if at := r.nextAt.Load(); at != 0 && now.UnixNano() >= at {
		r.mu.Lock()
		if r.next != nil && now.UnixNano() >= r.nextAt.Load() {
			r.prev = r.active.Load()
			r.active.Store(r.next)
			r.next = nil
			r.nextAt.Store(0)
		}
		r.mu.Unlock()
	}
	return r.active.Load()
}

// Rotate makes a new key, used from now+lead on; until then it is only
// announced. A rotation while one is pending replaces the pending key.
func (r *Keyring) Rotate(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = newSendKey(r.active.Load().ID + 1)
	r.nextAt.Store(now.Add(r.lead).UnixNano())
}

// Keys are the keys to announce: active, next and previous (those that exist).
func (r *Keyring) Keys(now time.Time) []Key {
	r.current(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Key{r.active.Load().Key}
	for _, k := range []*sendKey{r.next, r.prev} {
		if k != nil {
			out = append(out, k.Key)
		}
	}
	return out
}

// Seal writes a datagram into dst under the current key (see sendKey.seal).
func (r *Keyring) Seal(now time.Time, dst []byte, kind Kind, stream uint32, body []byte) ([]byte, error) {
	if len(body) > MaxBody || len(dst) < len(body)+Overhead {
		return nil, ErrLong
	}
	return r.current(now).seal(dst, r.sender, kind, stream, body), nil
}
