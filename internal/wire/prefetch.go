package wire

import (
	"unsafe"

	"github.com/podium-sfu/podium/internal/prefetch"
)

// PrefetchAEAD asks for the lines of the AES-GCM state a seal reads, through
// the interface's data word (an AES-CM sealer asks for none). Go's GCM keeps
// its expanded keys first (rounds, then the encryption keys: 3 lines for
// AES-128), then the decryption keys, which a seal does not read, then its
// GHASH table (the last 5 of 12 lines). Were the layout to change, only the
// hint would be wrong.
func (s *RTPSealer) PrefetchAEAD() {
	if s.aead == nil {
		return
	}
	p := (*[2]unsafe.Pointer)(unsafe.Pointer(&s.aead))[1]
	prefetch.Lines(p, 3)
	prefetch.LinesFrom(p, 7, 5)
}
