package peer

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/pion/dtls/v3"
	"github.com/pion/srtp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

// Exporting a connection's SRTP keys from pion.
//
// Pion derives the SRTP keys inside DTLSTransport.startSRTP and keeps them in
// its SRTP sessions; no public API hands them (or the *dtls.Conn they come
// from) out. SettingEngine's DTLS key log gives the master secret but not the
// server random the exporter needs. So dtlsConn reads DTLSTransport's
// unexported field conn with reflect and unsafe. webrtc is pinned (v4.2.20);
// TestDTLSConnFieldLayout fails loudly if an upgrade renames, retypes or
// removes the field, and exportKeys returns an error (the connection then
// keeps pion's data plane) rather than guessing.
//
// It must run inside the DTLSTransport's state handler for the connected
// state: pion sets conn just before calling it on the same goroutine, holding
// the transport's lock (so the read is ordered after the write, and no method
// of the transport may be called there).

var (
	errNoDTLSConn      = errors.New("pion's DTLSTransport has no field conn of type *dtls.Conn (pion layout changed)")
	errNoDTLSState     = errors.New("DTLS connection state unavailable")
	errNoSRTPProfile   = errors.New("no SRTP protection profile negotiated")
	dtlsConnType       = reflect.TypeOf((*dtls.Conn)(nil))
	dtlsConnFieldIndex = func() []int {
		f, ok := reflect.TypeOf(webrtc.DTLSTransport{}).FieldByName("conn")
		if !ok || f.Type != dtlsConnType {
			return nil
		}
		return f.Index
	}()
)

// dtlsConn is t's DTLS connection (nil before the handshake finished).
func dtlsConn(t *webrtc.DTLSTransport) (*dtls.Conn, error) {
	if dtlsConnFieldIndex == nil {
		return nil, errNoDTLSConn
	}
	f := reflect.ValueOf(t).Elem().FieldByIndex(dtlsConnFieldIndex)
	p := (**dtls.Conn)(unsafe.Pointer(f.UnsafeAddr()))
	return *p, nil
}

// exportKeys derives t's SRTP keys; call it from t's state handler on
// DTLSTransportStateConnected.
func exportKeys(t *webrtc.DTLSTransport, isClient bool) (wire.Keys, error) {
	c, err := dtlsConn(t)
	if err != nil {
		return wire.Keys{}, err
	}
	if c == nil {
		return wire.Keys{}, errNoDTLSState
	}
	dp, ok := c.SelectedSRTPProtectionProfile()
	if !ok {
		return wire.Keys{}, errNoSRTPProfile
	}
	profile, err := srtpProfile(dp)
	if err != nil {
		return wire.Keys{}, err
	}
	state, ok := c.ConnectionState()
	if !ok {
		return wire.Keys{}, errNoDTLSState
	}
	return wire.ExportKeys(&state, profile, isClient)
}

// srtpProfile maps the negotiated DTLS-SRTP profile as pion does.
func srtpProfile(p dtls.SRTPProtectionProfile) (srtp.ProtectionProfile, error) {
	switch p {
	case dtls.SRTP_AEAD_AES_128_GCM:
		return srtp.ProtectionProfileAeadAes128Gcm, nil
	case dtls.SRTP_AEAD_AES_256_GCM:
		return srtp.ProtectionProfileAeadAes256Gcm, nil
	case dtls.SRTP_AES128_CM_HMAC_SHA1_80:
		return srtp.ProtectionProfileAes128CmHmacSha1_80, nil
	case dtls.SRTP_NULL_HMAC_SHA1_80:
		return srtp.ProtectionProfileNullHmacSha1_80, nil
	}
	return 0, fmt.Errorf("%w: %v", errNoSRTPProfile, p)
}
