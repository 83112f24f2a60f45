package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/load"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/server"
)

// syntheticPublishers joins n `podium load` participants to room, in process:
// Opus and three-layer VP8 simulcast (pre-encoded 180p/360p/720p clips),
// speaking in the realistic pattern. Their token grants publish only, so
// they receive nothing: every video the server forwards goes to the browsers.
func syntheticPublishers(t *testing.T, srv *server.Server, key auth.Key, roomName string, n int) *load.Run {
	t.Helper()
	tok, err := auth.Sign(key, auth.Claims{Room: roomName, Permissions: auth.Permissions{Publish: true}, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run, err := load.Start(ctx, load.Config{
		URL:          "ws" + strings.TrimPrefix(srv.URL(), "http") + "ws",
		Room:         roomName,
		Token:        tok,
		Participants: load.Group("syn", n, load.ParticipantSpec{Audio: true, Video: load.VideoSimulcast}),
		Speech:       load.SpeechRealistic,
		Seed:         1,
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close(); cancel() })
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := run.WaitJoined(wctx); err != nil {
		t.Fatalf("synthetic publishers: %v (%s)", err, run.LastError())
	}
	return run
}

// devServerWithKey: dev mode (browsers join without a token, with every
// permission) plus a key, so synthetic participants can join with narrower tokens.
func devServerWithKey(t *testing.T) (*server.Server, auth.Key) {
	key := auth.Key{ID: "e2e", Secret: []byte("0123456789abcdef0123456789abcdef")}
	srv := startServerWith(t, func(c *config.Config) {
		c.AuthKeys = []string{key.ID + ":" + string(key.Secret)}
		c.Dev = true
	})
	return srv, key
}

// press sends a key to the page as the keyboard would (CDP Input events).
func (b *Browser) press(key string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(key)); err != nil {
		b.t.Fatalf("%s: key %q: %v", b.name, key, err)
	}
}

// gridPage is what the viewer's grid shows: the page, the remote participants
// on it (with the names their tiles show), and the size in device pixels the
// client told the server for each.
type gridPage struct {
	Layout string            `json:"layout"`
	Page   int               `json:"page"`
	Pages  int               `json:"pages"`
	IDs    []string          `json:"ids"`
	Names  map[string]string `json:"names"`
	Sent   map[string]struct {
		Width  int    `json:"width"`
		Height int    `json:"height"`
		Role   string `json:"role"`
	} `json:"sent"`
	// Rendered: each page tile's video in device pixels.
	Rendered map[string][2]int `json:"rendered"`
}

func (b *Browser) gridPage() (gridPage, error) {
	var g gridPage
	err := b.eval(`(() => {
		const label = document.querySelector('.page-label');
		const tiles = [...document.querySelectorAll('.grid-tiles .tile[data-participant-id]')];
		const dpr = window.devicePixelRatio || 1;
		const sent = window.podium.constraints();
		const out = {layout: document.querySelector('.gallery').dataset.layout, page: +(label?.dataset.page ?? 0),
			pages: +(label?.dataset.pages ?? 0), ids: [], names: {}, sent: {}, rendered: {}};
		for (const t of tiles) {
			const id = t.dataset.participantId;
			const r = t.querySelector('video').getBoundingClientRect();
			out.ids.push(id);
			out.names[id] = t.querySelector('.name').textContent;
			out.rendered[id] = [Math.round(r.width * dpr), Math.round(r.height * dpr)];
			if (sent[id]) out.sent[id] = sent[id];
		}
		return out;
	})()`, &g)
	return g, err
}

// The encoding internal/algo/layers picks for a tile of w x h device pixels
// from a publisher's encodings (sizes from the server, nominal until known).
func wantedEncoding(pub room.ParticipantStats, w, h int) int {
	encs := []layers.Encoding{{Width: 320, Height: 180, Active: true}, {Width: 640, Height: 360, Active: true}, {Width: 1280, Height: 720, Active: true}}
	for _, tr := range pub.Publishing {
		if i := slices.Index(load.SimulcastRIDs, tr.RID); tr.Kind == "video" && i >= 0 && tr.Width > 0 {
			encs[i].Width, encs[i].Height = tr.Width, tr.Height
		}
	}
	return layers.Choose(encs, layers.Want{Width: w, Height: h}, 0).Encoding
}

// serverForwardsPage checks the server's view of the room: the viewer is
// forwarded exactly the page's videos (its Last N selection, and the room's
// count of video streams being sent, which only the viewer receives), each at
// the encoding its tile size calls for.
func serverForwardsPage(srv *server.Server, roomName, viewer string, g gridPage) (bool, string) {
	r, ok := srv.Hub().Room(roomName)
	if !ok {
		return false, "no room"
	}
	st, ok := r.Stats(time.Now())
	if !ok {
		return false, "room ended"
	}
	byID := map[string]room.ParticipantStats{}
	for _, p := range st.Participants {
		byID[p.ID] = p
	}
	v := byID[viewer]
	got, want := slices.Sorted(slices.Values(v.Forwarded)), slices.Sorted(slices.Values(g.IDs))
	if !slices.Equal(got, want) {
		return false, fmt.Sprintf("viewer forwarded %v, page shows %v", got, want)
	}
	if st.Forwarding["video"] != len(g.IDs) {
		return false, fmt.Sprintf("server forwards %d video streams, page shows %d", st.Forwarding["video"], len(g.IDs))
	}
	if v.Downlink == nil {
		return false, "viewer has no downlink stats"
	}
	var layersSeen []string
	for _, id := range g.IDs {
		c, ok := g.Sent[id]
		if !ok {
			return false, fmt.Sprintf("no constraint sent for %s", id)
		}
		if rw := g.Rendered[id]; abs(rw[0]-c.Width) > 2 || abs(rw[1]-c.Height) > 2 || c.Role != "thumbnail" {
			return false, fmt.Sprintf("%s: constraint %dx%d %s, tile renders %dx%d", id, c.Width, c.Height, c.Role, rw[0], rw[1])
		}
		alloc, ok := v.Downlink.Videos[id]
		wantEnc := wantedEncoding(byID[id], c.Width, c.Height)
		if !ok || alloc.Suspended || alloc.Encoding != wantEnc {
			return false, fmt.Sprintf("%s (%s) allocated %+v, its %dx%d tile calls for encoding %d", id, g.Names[id], alloc, c.Width, c.Height, wantEnc)
		}
		layersSeen = append(layersSeen, fmt.Sprintf("%s %dx%d→%d", g.Names[id], c.Width, c.Height, alloc.Encoding))
	}
	return true, strings.Join(layersSeen, ", ")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestGridViewPagesDriveForwarding: 12 participants — 11 synthetic `podium
// load` publishers and one Chromium viewer (1280x800) in grid view. The
// viewer switches to grid view with the G key; its window holds 3x2 tiles of
// at least 320x180, so page 1 shows itself and 5 others, page 2 (PageDown)
// the other 6. On each page the server forwards the viewer exactly the page's
// videos, each at the encoding internal/algo/layers picks for the tile's real
// size; the viewer decodes exactly the page's videos; every tile names its
// participant as the server does and shows its connection quality (icon and
// text, in its aria-label too).
func TestGridViewPagesDriveForwarding(t *testing.T) {
	srv, key := devServerWithKey(t)
	const roomName = "e2e-grid"
	syntheticPublishers(t, srv, key, roomName, 11)
	viewer := launch(t, "viewer", autoplay)
	viewerID := viewer.join(srv.URL()+roomName+"?video=320x180&name=", "viewer")
	within(t, "11 remote tiles", 10*time.Second, func() (bool, string) {
		ids, err := viewer.tiles()
		return err == nil && len(ids) == 11, fmt.Sprintf("%d tiles (%v)", len(ids), err)
	})

	viewer.press("g")
	var pages [][]string
	count := 2 // known on page 1
	for page := 1; page <= count; page++ {
		if page > 1 {
			viewer.press(kb.PageDown)
		}
		var g gridPage
		within(t, fmt.Sprintf("grid page %d shown", page), 5*time.Second, func() (bool, string) {
			var err error
			g, err = viewer.gridPage()
			return err == nil && g.Layout == "grid" && g.Page == page && g.Pages >= 2 && len(g.IDs) > 0,
				fmt.Sprintf("%+v %v", g, err)
		})
		if page == 1 {
			count = g.Pages
		}
		var area string
		_ = viewer.eval(`(() => { const r = document.querySelector('.grid-tiles').getBoundingClientRect();
			return innerWidth + 'x' + innerHeight + ' window, tiles area ' + Math.round(r.width) + 'x' + Math.round(r.height) })()`, &area)
		t.Logf("page %d of %d: %d remote tiles (%s)", g.Page, g.Pages, len(g.IDs), area)
		var detail string
		took := within(t, fmt.Sprintf("page %d: the server forwards exactly its videos at the tiles' layers", page), 25*time.Second, func() (bool, string) {
			if fresh, err := viewer.gridPage(); err == nil {
				g = fresh // tiles settle as videos arrive
			}
			var ok bool
			ok, detail = serverForwardsPage(srv, roomName, viewerID, g)
			return ok, detail
		})
		t.Logf("page %d: forwarded as shown after %v: %s", page, took.Round(100*time.Millisecond), detail)
		within(t, fmt.Sprintf("page %d: the viewer decodes exactly the page's videos", page), 10*time.Second, func() (bool, string) {
			got, rows, err := decodingVideos(viewer)
			if err != nil {
				return false, err.Error()
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(g.IDs))
			return slices.Equal(got, want), fmt.Sprintf("decoding %v, page %v; %s", got, want, rows)
		})
		within(t, fmt.Sprintf("page %d: every tile shows its connection quality, labelled", page), 10*time.Second, func() (bool, string) {
			var bad []string
			err := viewer.eval(`[...document.querySelectorAll('.grid-tiles .tile[data-participant-id]')].flatMap(t => {
				const q = t.querySelector('.quality'), name = t.querySelector('.name').textContent;
				const level = q && !q.hidden ? q.dataset.level : '';
				const ok = ['good', 'fair', 'poor'].includes(level) && q.textContent.toLowerCase() === level &&
					t.getAttribute('aria-label').startsWith(name + ', ') && t.getAttribute('aria-label').includes('connection ' + level);
				return ok ? [] : [name + ': ' + (q ? q.outerHTML.slice(0, 60) : 'no badge') + ' / ' + t.getAttribute('aria-label')];
			})`, &bad)
			return err == nil && len(bad) == 0, fmt.Sprint(bad, err)
		})
		r, _ := srv.Hub().Room(roomName)
		st, _ := r.Stats(time.Now())
		for _, p := range st.Participants {
			if slices.Contains(g.IDs, p.ID) && g.Names[p.ID] != p.Name {
				t.Errorf("tile of %s says %q, the server calls it %q", p.ID, g.Names[p.ID], p.Name)
			}
		}
		pages = append(pages, g.IDs)
	}
	all := slices.Concat(pages...)
	slices.Sort(all)
	if len(all) != 11 || len(slices.Compact(all)) != 11 {
		t.Errorf("the pages show %v: want the 11 others once each", pages)
	}
}
