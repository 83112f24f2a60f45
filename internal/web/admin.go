package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// Admin is the admin REST API under /api/v1/ (docs/admin-api.yaml). Every
// request needs a token with the admin permission in an Authorization: Bearer
// header; a token for one room administers that room only, one for "*" every
// room. In dev mode a request without a token is allowed.
type Admin struct {
	Hub  *room.Hub
	Auth *auth.Verifier // nil without keys
	Dev  bool
	Now  func() time.Time // nil: time.Now
	Log  *slog.Logger
	// Node is this node's cluster id; Remote, set in a cluster, asks the
	// room's other bridges for their participants (docs/cluster.md).
	Node   string
	Remote func(ctx context.Context, room string) []Bridge
	// Cluster, set in a cluster, carries actions to the room's other
	// bridges (admincluster.go).
	Cluster ClusterAdmin
}

// maxAdminBody bounds a request body.
const maxAdminBody = 64 << 10

// Routes returns the API's handler; mount it at /api/v1/.
func (a *Admin) Routes() http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range a.routes() {
		mux.HandleFunc(pattern, h)
	}
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "not-found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return a.authenticated(mux)
}

// routes are the API's endpoints; docs/admin-api.yaml describes each.
func (a *Admin) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /api/v1/rooms":                                a.listRooms,
		"GET /api/v1/rooms/{room}":                         a.getRoom,
		"PATCH /api/v1/rooms/{room}":                       a.patchRoom,
		"DELETE /api/v1/rooms/{room}":                      a.closeRoom,
		"GET /api/v1/rooms/{room}/participants":            a.listParticipants,
		"GET /api/v1/rooms/{room}/participants/{id}":       a.getParticipant,
		"POST /api/v1/rooms/{room}/participants/{id}/mute": a.muteParticipant,
		"DELETE /api/v1/rooms/{room}/participants/{id}":    a.removeParticipant,
	}
}

// apiError writes {"error":{"code":..,"message":..}}.
func apiError(w http.ResponseWriter, status int, code, message string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="podium"`)
	}
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}

type scopeKey struct{}

// scope is what the request's token may administer: a room name or auth.AnyRoom.
type scope struct {
	room     string
	identity string
}

func (s scope) allows(room string) bool { return s.room == auth.AnyRoom || s.room == room }

// authenticated checks the bearer token before any route runs.
func (a *Admin) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc, status, code, msg := a.authorize(r)
		if status != 0 {
			apiError(w, status, code, msg)
			return
		}
		if !jsonOrAuthorized(r) {
			apiError(w, http.StatusUnsupportedMediaType, signal.CodeBadMessage, "a request with a body must be Content-Type: application/json")
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxAdminBody)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, sc)))
	})
}

func (a *Admin) authorize(r *http.Request) (scope, int, string, string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if a.Dev {
			return scope{room: auth.AnyRoom}, 0, "", ""
		}
		return scope{}, http.StatusUnauthorized, signal.CodeUnauthorized, "an Authorization: Bearer <token> header with an admin token is required"
	}
	token, ok := BearerToken(h)
	if !ok {
		return scope{}, http.StatusUnauthorized, signal.CodeUnauthorized, "the Authorization header must be Bearer <token>"
	}
	if a.Auth == nil { // dev mode without keys: tokens cannot be checked
		return scope{room: auth.AnyRoom}, 0, "", ""
	}
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	claims, err := a.Auth.Verify(token, now)
	switch {
	case errors.Is(err, auth.ErrExpired):
		return scope{}, http.StatusUnauthorized, signal.CodeTokenExpired, err.Error()
	case err != nil:
		return scope{}, http.StatusUnauthorized, signal.CodeUnauthorized, "token rejected: " + err.Error()
	case !claims.Permissions.Admin:
		return scope{}, http.StatusForbidden, signal.CodeForbidden, "the token lacks the admin permission"
	}
	return scope{room: claims.Room, identity: claims.Identity}, 0, "", ""
}

// BearerToken is the token of an Authorization header value "Bearer <token>";
// the scheme is case-insensitive (RFC 9110, section 11.1).
func BearerToken(header string) (string, bool) {
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimLeft(token, " ")
	return token, strings.EqualFold(scheme, "Bearer") && token != ""
}

// jsonOrAuthorized reports whether r cannot be a simple cross-site request (one
// a page on any site may send without asking, like a text/plain POST): it has
// no body, or an Authorization header, or a JSON body.
func jsonOrAuthorized(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return true
	}
	if r.Header.Get("Authorization") != "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// scopeOf is the request's scope (set by authenticated).
func (a *Admin) scopeOf(r *http.Request) scope {
	sc, _ := r.Context().Value(scopeKey{}).(scope)
	return sc
}

// room finds the path's room after checking the scope.
func (a *Admin) room(w http.ResponseWriter, r *http.Request) (*room.Room, bool) {
	rm, ok := a.roomOrElsewhere(w, r, false)
	return rm, ok && rm != nil
}

// roomOrElsewhere is room, but in a cluster (elsewhere) a room not served
// here is nil with ok true: another bridge may serve it.
func (a *Admin) roomOrElsewhere(w http.ResponseWriter, r *http.Request, elsewhere bool) (*room.Room, bool) {
	name := r.PathValue("room")
	if !signal.ValidRoom(name) {
		apiError(w, http.StatusNotFound, "not-found", "not a room name")
		return nil, false
	}
	if !a.scopeOf(r).allows(name) {
		apiError(w, http.StatusForbidden, signal.CodeForbidden, fmt.Sprintf("the token administers room %q only", a.scopeOf(r).room))
		return nil, false
	}
	rm, ok := a.Hub.Room(name)
	if !ok && elsewhere && a.Cluster != nil {
		return nil, true
	}
	if !ok {
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no room %q (a room exists while someone is in it)", name))
		return nil, false
	}
	return rm, true
}

func (a *Admin) stats(w http.ResponseWriter, rm *room.Room) (room.Stats, bool) {
	st, ok := rm.Stats(time.Now())
	if !ok {
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("room %q has just ended", rm.Name()))
	}
	return st, ok
}

func (a *Admin) listRooms(w http.ResponseWriter, r *http.Request) {
	sc := a.scopeOf(r)
	rooms := []room.Stats{}
	for _, rm := range a.Hub.Rooms() {
		if !sc.allows(rm.Name()) {
			continue
		}
		if st, ok := rm.Stats(time.Now()); ok {
			rooms = append(rooms, st)
		}
	}
	if a.Cluster != nil {
		a.listClusterRooms(w, r, rooms)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rooms": rooms})
}

func (a *Admin) getRoom(w http.ResponseWriter, r *http.Request) {
	rm, ok := a.roomOrElsewhere(w, r, true)
	switch {
	case !ok:
	case rm == nil:
		a.remoteRoom(w, r)
	default:
		st, ok := a.stats(w, rm)
		switch {
		case !ok:
		case a.Remote != nil: // the participants of every bridge, as GET .../participants lists them
			raw, _ := json.Marshal(st)
			writeJSON(w, http.StatusOK, a.clusterRoom(r.Context(), rm.Name(), raw, a.Node, &st))
		default:
			writeJSON(w, http.StatusOK, st)
		}
	}
}

// roomPatch is the body of PATCH /rooms/{room}: fields left out are unchanged.
type roomPatch struct {
	LastN        *int     `json:"lastN"`
	OnStage      []string `json:"onStage"`
	E2EERequired *bool    `json:"e2eeRequired"`
	P2P          *bool    `json:"p2p"`
	AudioSlots   *int     `json:"audioSlots"`
}

func (a *Admin) patchRoom(w http.ResponseWriter, r *http.Request) {
	rm, ok := a.roomOrElsewhere(w, r, true)
	if !ok {
		return
	}
	var p roomPatch
	if !decodeBody(w, r, &p) {
		return
	}
	if p.LastN != nil && (*p.LastN < -1 || *p.LastN > 1000) {
		apiError(w, http.StatusBadRequest, signal.CodeBadMessage, "lastN must be -1 (unlimited) to 1000")
		return
	}
	if len(p.OnStage) > 64 {
		apiError(w, http.StatusBadRequest, signal.CodeBadMessage, "at most 64 participants on stage")
		return
	}
	if p.AudioSlots != nil && (*p.AudioSlots < 0 || *p.AudioSlots > 16) {
		apiError(w, http.StatusBadRequest, signal.CodeBadMessage, "audioSlots must be 0 (off) to 16")
		return
	}
	if p.LastN == nil && p.OnStage == nil && p.E2EERequired == nil && p.P2P == nil && p.AudioSlots == nil {
		apiError(w, http.StatusBadRequest, signal.CodeBadMessage, "nothing to change: give lastN, onStage, e2eeRequired, p2p and/or audioSlots")
		return
	}
	c := signal.RoomSettings{LastN: p.LastN, OnStage: p.OnStage, E2EERequired: p.E2EERequired, P2P: p.P2P, AudioSlots: p.AudioSlots}
	if a.Cluster != nil {
		a.patchClusterRoom(w, r, rm, c)
		return
	}
	unencrypted := rm.UpdateSettings(c)
	a.audit(r, "room settings changed", "room", rm.Name(), "lastN", p.LastN, "onStage", p.OnStage,
		"e2eeRequired", p.E2EERequired, "p2p", p.P2P, "audioSlots", p.AudioSlots, "unencrypted", unencrypted)
	if st, ok := a.stats(w, rm); ok {
		writeJSON(w, http.StatusOK, st)
	}
}

func (a *Admin) closeRoom(w http.ResponseWriter, r *http.Request) {
	rm, ok := a.roomOrElsewhere(w, r, true)
	if !ok {
		return
	}
	if a.Cluster != nil {
		a.closeClusterRoom(w, r, rm)
		return
	}
	n := rm.CloseRoom("the room was closed by an administrator")
	a.audit(r, "room closed", "room", rm.Name(), "participants", n)
	writeJSON(w, http.StatusOK, map[string]any{"room": rm.Name(), "removed": n})
}

func (a *Admin) listParticipants(w http.ResponseWriter, r *http.Request) {
	if a.Remote != nil {
		a.listClusterParticipants(w, r)
		return
	}
	if rm, ok := a.room(w, r); ok {
		if st, ok := a.stats(w, rm); ok {
			writeJSON(w, http.StatusOK, map[string]any{"participants": st.Participants})
		}
	}
}

// participant finds the path's participant in the room's stats.
func (a *Admin) participant(w http.ResponseWriter, r *http.Request) (*room.Room, room.ParticipantStats, bool) {
	rm, p, here, ok := a.participantOrElsewhere(w, r, false)
	return rm, p, ok && here
}

// participantOrElsewhere is participant, but in a cluster (elsewhere) a
// participant not served here is here false with ok true: another bridge
// may serve it.
func (a *Admin) participantOrElsewhere(w http.ResponseWriter, r *http.Request, elsewhere bool) (*room.Room, room.ParticipantStats, bool, bool) {
	rm, ok := a.roomOrElsewhere(w, r, elsewhere)
	if !ok || rm == nil {
		return nil, room.ParticipantStats{}, false, ok
	}
	st, ok := a.stats(w, rm)
	if !ok {
		return nil, room.ParticipantStats{}, false, false
	}
	id := r.PathValue("id")
	for _, p := range st.Participants {
		if p.ID == id {
			return rm, p, true, true
		}
	}
	if elsewhere && a.Cluster != nil {
		return nil, room.ParticipantStats{}, false, true
	}
	apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no participant %q in room %q", truncate(id), rm.Name()))
	return nil, room.ParticipantStats{}, false, false
}

func (a *Admin) getParticipant(w http.ResponseWriter, r *http.Request) {
	_, p, here, ok := a.participantOrElsewhere(w, r, true)
	switch {
	case !ok:
	case !here:
		if p, ok := a.remoteParticipant(w, r, ParticipantAction{}); ok {
			writeJSON(w, http.StatusOK, p)
		}
	default:
		writeJSON(w, http.StatusOK, p)
	}
}

func (a *Admin) muteParticipant(w http.ResponseWriter, r *http.Request) {
	rm, p, here, ok := a.participantOrElsewhere(w, r, true)
	if !ok {
		return
	}
	var m signal.Muted
	if !decodeBody(w, r, &m) {
		return
	}
	if !here {
		if p, ok := a.remoteParticipant(w, r, ParticipantAction{Mute: &m}); ok {
			a.audit(r, "participant muted", "room", r.PathValue("room"), "participant", p["id"], "node", p["node"], "audio", m.Audio, "video", m.Video)
			writeJSON(w, http.StatusOK, p)
		}
		return
	}
	if !rm.AdminMute(p.ID, m.Audio, m.Video) {
		apiError(w, http.StatusNotFound, "not-found", "the participant has just left")
		return
	}
	a.audit(r, "participant muted", "room", rm.Name(), "participant", p.ID, "audio", m.Audio, "video", m.Video)
	if _, p, ok := a.participant(w, r); ok {
		writeJSON(w, http.StatusOK, p)
	}
}

func (a *Admin) removeParticipant(w http.ResponseWriter, r *http.Request) {
	rm, p, here, ok := a.participantOrElsewhere(w, r, true)
	if !ok {
		return
	}
	if !here {
		if p, ok := a.remoteParticipant(w, r, ParticipantAction{Remove: true}); ok {
			a.audit(r, "participant removed", "room", r.PathValue("room"), "participant", p["id"], "node", p["node"])
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	if !rm.Remove(p.ID, signal.ByeRemoved, "you were removed from the room by an administrator") {
		apiError(w, http.StatusNotFound, "not-found", "the participant has just left")
		return
	}
	a.audit(r, "participant removed", "room", rm.Name(), "participant", p.ID)
	w.WriteHeader(http.StatusNoContent)
}

// decodeBody reads one JSON object with known fields only.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, signal.CodeTooLarge, fmt.Sprintf("body over %d bytes", maxAdminBody))
			return false
		}
		apiError(w, http.StatusBadRequest, signal.CodeBadMessage, "body: "+err.Error())
		return false
	}
	return true
}

// audit logs an administrator's action with who did it.
func (a *Admin) audit(r *http.Request, msg string, args ...any) {
	if a.Log != nil {
		a.Log.Info(msg, append(args, "admin", a.scopeOf(r).identity, "remote", r.RemoteAddr)...)
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
