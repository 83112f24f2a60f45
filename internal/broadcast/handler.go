package broadcast

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/peer"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// Handler serves POST /whip/{room}, POST /whep/{room} and DELETE on the
// resources they create (docs/broadcast.md).
type Handler struct {
	Engine *peer.Engine
	Hub    *room.Hub
	Auth   *auth.Verifier // nil without keys
	Dev    bool           // dev mode: requests without a token have every permission
	Now    func() time.Time
	Log    *slog.Logger
	// ClientIP is the address a request came from (rooms-per-ip, joins-per-ip).
	ClientIP func(*http.Request) string
	Joins    *limit.PerKey // joins per client address (nil: unlimited)
	Meter    *forward.Meter
	// ConnectTimeout ends a resource whose connection is not up by then (0: 30 s).
	ConnectTimeout time.Duration

	mu        sync.Mutex
	resources map[string]*endpoint // by path: /whip/<room>/<id>
}

// Routes are the handler's endpoints; mount them at /whip/ and /whep/.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	for _, k := range []Kind{WHIP, WHEP} {
		k := k
		prefix := "/" + strings.ToLower(k.String()) + "/"
		mux.HandleFunc("POST "+prefix+"{room}", func(w http.ResponseWriter, r *http.Request) { h.post(k, w, r) })
		mux.HandleFunc("DELETE "+prefix+"{room}/{id}", h.delete)
		mux.HandleFunc("PATCH "+prefix+"{room}/{id}", h.patch)
		mux.HandleFunc("OPTIONS "+prefix+"{room}", h.options)
		mux.HandleFunc("OPTIONS "+prefix+"{room}/{id}", h.options)
		mux.HandleFunc(prefix, func(w http.ResponseWriter, r *http.Request) {
			fail(w, refuse(http.StatusNotFound, "no such %s endpoint: %s %s", k, r.Method, r.URL.Path))
		})
	}
	return cors(mux)
}

// cors lets a player on another origin use the API: tokens travel in a
// header, never in cookies, so any origin may call it.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", "*")
		hd.Set("Access-Control-Expose-Headers", "Location, ETag")
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) options(w http.ResponseWriter, _ *http.Request) {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", "POST, DELETE, PATCH, OPTIONS")
	hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match")
	hd.Set("Accept-Post", "application/sdp")
	w.WriteHeader(http.StatusNoContent)
}

func fail(w http.ResponseWriter, e *RequestError) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="podium"`)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds())))
	}
	w.WriteHeader(e.Status)
	_, _ = io.WriteString(w, e.Msg+"\n")
}

// post creates a publisher (WHIP) or a viewer (WHEP) from the offer and
// answers 201 with the answer and the resource's Location.
func (h *Handler) post(kind Kind, w http.ResponseWriter, r *http.Request) {
	roomName := r.PathValue("room")
	if !signal.ValidRoom(roomName) {
		fail(w, refuse(http.StatusNotFound, "%q is not a room name (1-64 characters of A-Z a-z 0-9 _ . -)", roomName))
		return
	}
	g, rerr := h.authorize(r, roomName)
	if rerr != nil {
		fail(w, rerr)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxOfferBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		fail(w, refuse(http.StatusRequestEntityTooLarge, "the offer is larger than %d bytes", MaxOfferBytes))
		return
	case err != nil:
		fail(w, refuse(http.StatusBadRequest, "reading the offer: %v", err))
		return
	}
	offer, rerr := CheckOffer(kind, r.Header.Get("Content-Type"), body)
	if rerr != nil {
		fail(w, rerr)
		return
	}
	switch {
	case kind == WHIP && !g.perms.Publish:
		fail(w, refuse(http.StatusForbidden, "publishing needs the publish permission, which the token does not grant"))
		return
	case kind == WHEP && !g.perms.Subscribe:
		fail(w, refuse(http.StatusForbidden, "playing needs the subscribe permission, which the token does not grant"))
		return
	case g.e2ee:
		fail(w, refuse(http.StatusForbidden, "the token demands end-to-end encryption, which a %s client cannot do", kind))
		return
	}
	addr := limit.AddressKey(h.clientIP(r))
	if !h.Joins.Allow(addr, h.now()) {
		fail(w, refuse(http.StatusTooManyRequests, "too many joins from your address in the last minute; wait a little and try again"))
		return
	}
	ans, location, etag, rerr := h.create(r.Context(), kind, roomName, g, r.URL.Query().Get("name"), addr, offer)
	if rerr != nil {
		fail(w, rerr)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/sdp")
	hd.Set("Location", location)
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, ans)
}

// create joins the room and answers the offer.
func (h *Handler) create(ctx context.Context, kind Kind, roomName string, g grant, queryName, addr string, offer Offer) (ans, location, etag string, _ *RequestError) {
	id, secret := "p"+randomHex(6), randomHex(16)
	var (
		pc     *webrtc.PeerConnection
		err    error
		member room.Member
		e      *endpoint
		v      *viewer
		perms  = signal.Permissions{Publish: true}
		name   = displayName(g, queryName, "WHIP")
	)
	if kind == WHIP {
		pc, err = h.Engine.NewPionPublishPC()
	} else {
		pc, err = h.Engine.NewPionSubscribePC()
		perms, name = signal.Permissions{Subscribe: true}, displayName(g, queryName, "WHEP player")
	}
	if err != nil {
		return "", "", "", refuse(http.StatusInternalServerError, "peer connection: %v", err)
	}
	log := h.log().With("room", roomName, "participant", id, "protocol", kind.String())
	if kind == WHIP {
		p := &publisher{meter: h.Meter}
		member, e = p, &p.endpoint
		pc.OnTrack(p.onTrack)
	} else {
		if v, err = newViewer(); err != nil {
			_ = pc.Close()
			return "", "", "", refuse(http.StatusInternalServerError, "%v", err)
		}
		member, e = v, &v.endpoint
	}
	e.setup(id, member, h.Hub, pc, log)
	if v != nil {
		if err := v.addTracks(); err != nil {
			e.cancel()
			_ = pc.Close()
			return "", "", "", refuse(http.StatusInternalServerError, "stage tracks: %v", err)
		}
	}
	info := signal.Participant{ID: id, Name: name}
	r, _, err := h.Hub.JoinWith(roomName, member, info, room.JoinOptions{Identity: g.identity, Permissions: perms, Address: addr})
	if err != nil {
		e.cancel()
		_ = pc.Close()
		return "", "", "", joinError(err)
	}
	e.room = r
	if kind == WHEP {
		r.SetLastN(member, 1) // the stage: one video
		e.goTrack(v.constrain)
	} else {
		r.DeclareEncodings(member, peer.OfferedRIDs(offer.SDP))
	}
	location = "/" + strings.ToLower(kind.String()) + "/" + roomName + "/" + id + "-" + secret
	e.onClose = func() { h.forget(location) }
	h.remember(location, e)
	timeout := h.ConnectTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	e.watch(timeout)
	actx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	ans, err = answer(actx, pc, offer.SDP)
	if err != nil {
		go e.close("answer: " + err.Error())
		return "", "", "", refuse(http.StatusBadRequest, "unacceptable offer: %v", err)
	}
	log.Info("joined", "name", name, "audio", offer.Audio, "video", offer.Video)
	return ans, location, `"` + randomHex(8) + `"`, nil
}

func (h *Handler) remember(path string, e *endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.resources == nil {
		h.resources = map[string]*endpoint{}
	}
	h.resources[path] = e
}

func (h *Handler) forget(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.resources, path)
}

func (h *Handler) lookup(path string) (*endpoint, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.resources[path]
	return e, ok
}

// delete ends a resource. Its URL is the credential: it holds 128 random
// bits only its creator was told.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	e, ok := h.lookup(r.URL.Path)
	if !ok {
		fail(w, refuse(http.StatusNotFound, "no such resource (it may have ended already)"))
		return
	}
	e.close("DELETE")
	w.WriteHeader(http.StatusOK)
}

// patch: trickle ICE and ICE restarts are not supported; the answer carries
// every candidate (RFC 9725 section 4.3.1 allows that).
func (h *Handler) patch(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.lookup(r.URL.Path); !ok {
		fail(w, refuse(http.StatusNotFound, "no such resource (it may have ended already)"))
		return
	}
	w.Header().Set("Allow", "DELETE, OPTIONS")
	fail(w, refuse(http.StatusMethodNotAllowed, "trickle ICE and ICE restarts are not supported: the answer carries every candidate"))
}

func (h *Handler) clientIP(r *http.Request) string {
	if h.ClientIP != nil {
		return h.ClientIP(r)
	}
	return r.RemoteAddr
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Close ends every resource (server shutdown).
func (h *Handler) Close() {
	h.mu.Lock()
	all := make([]*endpoint, 0, len(h.resources))
	for _, e := range h.resources {
		all = append(all, e)
	}
	h.mu.Unlock()
	for _, e := range all {
		e.close("server shutting down")
	}
}
