package e2e

import (
	"net/url"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/config"
)

// TestBrowserJoinsWithTokenLink: with access control on, the web client joins
// with the token of its page URL — directly, and through the join form when the
// link has no name — and without a token it is refused.
func TestBrowserJoinsWithTokenLink(t *testing.T) {
	key := auth.Key{ID: "e2e", Secret: []byte("0123456789abcdef0123456789abcdef")}
	srv := startServerWith(t, func(c *config.Config) { c.AuthKeys = []string{key.ID + ":" + string(key.Secret)} })
	token := func(identity string) string {
		tok, err := auth.Sign(key, auth.Claims{Room: "locked", Identity: identity, Permissions: auth.Permissions{Publish: true, Subscribe: true},
			Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	ann := launch(t, "Ann", camera(t, red, 320, 180))
	ann.open(srv.URL() + "locked?video=320x180&name=Ann&token=" + url.QueryEscape(token("ann")))
	within(t, "Ann joined with the token", 15*time.Second, func() (bool, string) { return ann.id() != "", "no participant id" })
	var search string // the token leaves the address bar; room and name stay
	if err := ann.eval(`location.pathname + location.search`, &search); err != nil || search != "/locked?video=320x180&name=Ann" {
		t.Errorf("address after joining %q (%v), want /locked?video=320x180&name=Ann", search, err)
	}

	// A link without a name shows the form; the token survives it.
	bob := launch(t, "Bob", camera(t, green, 320, 180))
	bob.open(srv.URL() + "locked?video=320x180&token=" + url.QueryEscape(token("bob")))
	if err := bob.eval(`(() => { document.querySelector('input[name=name]').value = 'Bob';
		document.querySelector('form').requestSubmit(); return true })()`, nil); err != nil {
		t.Fatal(err)
	}
	within(t, "Bob joined through the form", 15*time.Second, func() (bool, string) { return bob.id() != "", "no participant id" })

	eve := launch(t, "Eve")
	eve.open(srv.URL() + "locked?video=320x180&name=Eve")
	time.Sleep(3 * time.Second) // long enough to have joined, were it allowed
	if id := eve.id(); id != "" {
		t.Errorf("joined without a token as %s", id)
	}
	if r, ok := srv.Hub().Room("locked"); !ok || len(r.Participants()) != 2 {
		t.Errorf("room exists %v, participants %v", ok, r)
	}
	bobWho := who{Name: "Bob", ID: bob.id(), Colour: green}
	within(t, "Ann receives Bob", 15*time.Second, func() (bool, string) { return rising(ann, []string{bobWho.ID}) })
	within(t, "Ann's tile of Bob shows Bob", 3*time.Second, func() (bool, string) { return showsWho(ann, bobWho) })
}
