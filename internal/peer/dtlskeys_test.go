package peer

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

// Fails loudly when a pion upgrade moves DTLSTransport's conn: the own data
// plane would otherwise silently fall back to pion for every connection.
func TestDTLSConnFieldLayout(t *testing.T) {
	if dtlsConnFieldIndex == nil {
		t.Fatal("webrtc.DTLSTransport has no field conn *dtls.Conn: update dtlskeys.go for this pion version")
	}
	c, err := dtlsConn(&webrtc.DTLSTransport{})
	if err != nil || c != nil {
		t.Fatalf("a transport before its handshake: conn %v, err %v", c, err)
	}
}

// A connection of the engine, once DTLS is up, gets a route with the keys the
// peer derived for the opposite direction, and a UDP destination on our socket.
func TestRouteKeysMatchThePeers(t *testing.T) {
	e, err := NewEngine(Config{UDPPort: freePort(t), BindIPs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.pionOnly, e.sendOnly, e.feedbackOnly = false, false, false // PionDataPlaneEnv=all, whatever the default
	ours, err := e.NewSubscribePC()
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	got := make(chan []byte, 16)
	route := e.Route(ours, func(_ time.Time, b []byte, _ *wire.Batch) {
		select {
		case got <- append([]byte(nil), b...):
		default:
		}
	})
	if _, err := ours.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}

	theirs := loopbackPeer(t, func(*webrtc.SettingEngine) {})
	peerKeys := make(chan wire.Keys, 1)
	dt := theirs.SCTP().Transport()
	dt.OnStateChange(func(st webrtc.DTLSTransportState) {
		if st != webrtc.DTLSTransportStateConnected {
			return
		}
		client, err := dtlsIsClient(dt)
		if err != nil {
			t.Error(err)
			return
		}
		k, err := exportKeys(dt, client)
		if err != nil {
			t.Error(err)
			return
		}
		peerKeys <- k
	})

	negotiate(t, ours, theirs)

	var pk wire.Keys
	select {
	case pk = <-peerKeys:
	case <-time.After(15 * time.Second):
		t.Fatal("the peer's DTLS did not connect")
	}
	deadline := time.Now().Add(10 * time.Second)
	mode, keys := route.Decide()
	for mode != wire.Own && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		mode, keys = route.Decide()
	}
	if mode != wire.Own {
		t.Fatalf("route mode %v, want own", mode)
	}
	if keys.Profile != pk.Profile || !bytes.Equal(keys.LocalKey, pk.RemoteKey) || !bytes.Equal(keys.LocalSalt, pk.RemoteSalt) ||
		!bytes.Equal(keys.RemoteKey, pk.LocalKey) || !bytes.Equal(keys.RemoteSalt, pk.LocalSalt) {
		t.Fatal("our exported keys are not the peer's with directions swapped")
	}
	if d := route.Dest(); d == nil || d.Addr.Addr().String() != "127.0.0.1" {
		t.Fatalf("route destination %v, want the peer on 127.0.0.1", d)
	}

	// The peer's RTCP is taken at our socket, authenticated with the exported
	// keys, and handed over decrypted.
	pli := &rtcp.PictureLossIndication{SenderSSRC: 11, MediaSSRC: 22}
	for deadline := time.Now().Add(10 * time.Second); ; {
		// The peer's SRTCP session starts a moment after its DTLS state says
		// connected: until then WriteRTCP refuses ("has not started yet").
		if err := theirs.WriteRTCP([]rtcp.Packet{pli}); err != nil && time.Now().After(deadline) {
			t.Fatal(err)
		}
		select {
		case b := <-got:
			pkts, err := rtcp.Unmarshal(b)
			if err != nil || len(pkts) != 1 {
				t.Fatalf("handed %d packets (%v)", len(pkts), err)
			}
			if p, ok := pkts[0].(*rtcp.PictureLossIndication); !ok || *p != *pli {
				t.Fatalf("handed %+v, want %+v", pkts[0], pli)
			}
			if taken, rejected := e.RTCPTaken(); taken == 0 || rejected != 0 {
				t.Fatalf("taken %d rejected %d", taken, rejected)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer's RTCP never reached the handler")
		}
	}
}

// negotiate has offerer and answerer exchange descriptions with their
// candidates gathered (no trickle).
func negotiate(t *testing.T, offerer, answerer *webrtc.PeerConnection) {
	t.Helper()
	offer, err := offerer.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(offerer)
	if err := offerer.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	if err := answerer.SetRemoteDescription(*offerer.LocalDescription()); err != nil {
		t.Fatal(err)
	}
	answer, err := answerer.CreateAnswer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered = webrtc.GatheringCompletePromise(answerer)
	if err := answerer.SetLocalDescription(answer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	if err := offerer.SetRemoteDescription(*answerer.LocalDescription()); err != nil {
		t.Fatal(err)
	}
}

// loopbackPeer is a plain pion peer on loopback UDP, configured further by
// configure; closed when the test ends.
func loopbackPeer(t *testing.T, configure func(*webrtc.SettingEngine)) *webrtc.PeerConnection {
	t.Helper()
	var s webrtc.SettingEngine
	s.SetIncludeLoopbackCandidate(true)
	s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	s.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	configure(&s)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(s)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return pc
}
