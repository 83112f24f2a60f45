package broadcast

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// grant is what a request's token allows: the same rules as a join
// (internal/session): with keys a valid token for the room is required; in dev
// mode without a token everything is allowed.
type grant struct {
	perms    signal.Permissions
	identity string
	name     string // the token's display name, if any
	e2ee     bool   // the token demands end-to-end encryption
}

func (h *Handler) authorize(r *http.Request, roomName string) (grant, *RequestError) {
	all := grant{perms: signal.Permissions{Publish: true, Subscribe: true, Admin: true}}
	token, hasToken := bearer(r)
	if !hasToken {
		if h.Dev {
			return all, nil
		}
		return grant{}, refuse(http.StatusUnauthorized, "this server requires a token: send it as Authorization: Bearer <token>")
	}
	if h.Auth == nil { // dev mode without keys: tokens cannot be checked, nor are they needed
		return all, nil
	}
	claims, err := h.Auth.Verify(token, h.now())
	switch {
	case errors.Is(err, auth.ErrExpired):
		return grant{}, refuse(http.StatusUnauthorized, "token expired: %v", err)
	case err != nil:
		return grant{}, refuse(http.StatusUnauthorized, "token rejected: %v", err)
	case !claims.AllowsRoom(roomName):
		return grant{}, refuse(http.StatusForbidden, "the token is for room %q, not %q", claims.Room, roomName)
	}
	p := claims.Permissions
	return grant{perms: signal.Permissions{Publish: p.Publish, Subscribe: p.Subscribe, Admin: p.Admin},
		identity: claims.Identity, name: claims.Name, e2ee: claims.E2EE}, nil
}

// bearer is the request's Authorization: Bearer token.
func bearer(r *http.Request) (string, bool) {
	v := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// displayName is the token's name, else ?name=, else fallback.
func displayName(g grant, query, fallback string) string {
	if g.name != "" {
		return g.name
	}
	if n := utf8.RuneCountInString(query); n >= 1 && n <= 64 && utf8.ValidString(query) &&
		strings.IndexFunc(query, unicode.IsControl) < 0 {
		return query
	}
	return fallback
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// joinError maps the hub's refusals onto HTTP statuses.
func joinError(err error) *RequestError {
	switch {
	case errors.Is(err, room.ErrDraining), errors.Is(err, room.ErrClosed), errors.Is(err, room.ErrTooManyRooms):
		return refuse(http.StatusServiceUnavailable, "%v", err)
	case errors.Is(err, room.ErrBusy):
		e := refuse(http.StatusServiceUnavailable, "%v; try again in a minute", err)
		e.RetryAfter = time.Minute
		return e
	case errors.Is(err, room.ErrRoomFull), errors.Is(err, room.ErrTooManyRoomsFromAddress):
		return refuse(http.StatusServiceUnavailable, "%v", err)
	case errors.Is(err, room.ErrE2EERequired):
		return refuse(http.StatusForbidden, "%v: a %s client cannot encrypt end to end", err, "WHIP/WHEP")
	}
	return refuse(http.StatusInternalServerError, "%v", err)
}
