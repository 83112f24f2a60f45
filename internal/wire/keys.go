package wire

import (
	"crypto/cipher"
	"errors"
	"fmt"

	"github.com/pion/srtp/v3"
)

// Keys are one connection's SRTP master keys and salts, as the DTLS handshake
// exported them (RFC 5764 section 4.2): Local protects what we send, Remote
// authenticates what the peer sends.
type Keys struct {
	Profile               srtp.ProtectionProfile
	LocalKey, LocalSalt   []byte
	RemoteKey, RemoteSalt []byte

	rtpSealing *sessionSealing // the connection's RTP session AEAD, once shared (Route.SetKeys)
}

// sessionSealing is what every RTPSealer of one connection may share: the
// AES-GCM under the RTP session key, and the session salt. Go's AES-GCM holds
// no state that Seal changes (golang/go#41689: safe for concurrent use as its
// block cipher is), so the tracks of a connection seal with one key schedule
// and one GHASH table — per connection, as the floor's forwarder does, and
// not one copy per track, which a fan-out then misses in the cache on every
// destination. Each sealer keeps its own SSRCs' indexes and scratch.
type sessionSealing struct {
	aead cipher.AEAD
	salt [12]byte
}

// shareRTPSealing derives the RTP session AEAD once, for the sealers of every
// track of the connection (AEAD profiles only; the others keep a pion context
// per sealer). A failure leaves each sealer to derive its own, and fail alike.
func (k *Keys) shareRTPSealing() {
	aead, salt, err := sessionAEAD(k.Profile, labelSRTPKey, labelSRTPSalt, k.LocalKey, k.LocalSalt)
	if err == nil && aead != nil {
		k.rtpSealing = &sessionSealing{aead: aead, salt: salt}
	}
}

var errNoExporter = errors.New("no keying material exporter")

// ExportKeys derives the SRTP keys from a finished DTLS handshake. isClient is
// our DTLS role (the client's write keys come first in the exported material).
func ExportKeys(e srtp.KeyingMaterialExporter, profile srtp.ProtectionProfile, isClient bool) (Keys, error) {
	if e == nil {
		return Keys{}, errNoExporter
	}
	c := srtp.Config{Profile: profile}
	if err := c.ExtractSessionKeysFromDTLS(e, isClient); err != nil {
		return Keys{}, fmt.Errorf("export SRTP keys: %w", err)
	}
	return Keys{
		Profile:  profile,
		LocalKey: c.Keys.LocalMasterKey, LocalSalt: c.Keys.LocalMasterSalt,
		RemoteKey: c.Keys.RemoteMasterKey, RemoteSalt: c.Keys.RemoteMasterSalt,
	}, nil
}

// Outbound is a new context protecting what we send. A context is not safe
// for concurrent use: each owner (a destination's send state) has its own, and
// every SSRC is protected by exactly one context, or its index (and with GCM the
// nonce) would repeat.
func (k *Keys) Outbound() (*srtp.Context, error) {
	return srtp.CreateContext(k.LocalKey, k.LocalSalt, k.Profile)
}

// Inbound is a new context authenticating and decrypting what the peer sends,
// with replay protection.
func (k *Keys) Inbound() (*srtp.Context, error) {
	return srtp.CreateContext(k.RemoteKey, k.RemoteSalt, k.Profile,
		srtp.SRTPReplayProtection(128), srtp.SRTCPReplayProtection(128))
}

// Overhead is the most bytes protection adds to an RTP packet (auth tag or
// AEAD tag): destination buffers keep this much room beyond the packet.
const Overhead = 16
