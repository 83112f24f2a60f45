package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Firefox in the e2e tests: Debian's firefox-esr, headless, driven by
// puppeteer-core over WebDriver BiDi from a Node script (firefox/driver.mjs,
// its packages installed by `make test` with npm ci). The script answers JSON
// lines; firefoxPage is its end here and a Browser's page driver, so every
// helper that evaluates JavaScript in a page (showsWho, inbound, decodesOnly…)
// works on Firefox as on Chromium.

// firefoxPath finds firefox-esr; in CI a missing browser fails instead of skipping.
func firefoxPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FIREFOX"), "/usr/bin/firefox-esr"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if path, err := exec.LookPath("firefox-esr"); err == nil {
		return path
	}
	skipOrFail(t, "%s", "firefox-esr not installed (apt-get install -y firefox-esr)")
	return ""
}

// firefoxPage is one driver process: one Firefox, one page.
type firefoxPage struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers chan firefoxAnswer
	stderr  *lockedBuffer
	mu      sync.Mutex // one command at a time
	next    int
}

type firefoxAnswer struct {
	ID    int             `json:"id"`
	Value json.RawMessage `json:"value"`
	Error string          `json:"error"`
}

// lockedBuffer collects the driver's stderr for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 64<<10 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// launchFirefox starts firefox-esr with its fake camera and microphone
// (media.navigator.streams.fake); extra page scripts (a coloured camera, a
// switchable microphone) go in before the first page. driverArgs go to
// driver.mjs after the profile ("default-ice").
func launchFirefox(t *testing.T, name string, driverArgs ...string) *Browser {
	t.Helper()
	exe := firefoxPath(t)
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "%s", "node not installed: it runs the Firefox driver")
	}
	script, err := filepath.Abs(filepath.Join("firefox", "driver.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("firefox", "node_modules", "puppeteer-core")); err != nil {
		skipOrFail(t, "%s", "puppeteer-core not installed: run `make e2e-deps` (npm ci in e2e/firefox)")
	}
	cmd := exec.Command(node, append([]string{script, exe, t.TempDir()}, driverArgs...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &firefoxPage{cmd: cmd, stdin: stdin, answers: make(chan firefoxAnswer, 16), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: start the Firefox driver: %v", name, err)
	}
	go p.read(stdout)
	b := &Browser{t: t, name: name, page: p}
	b.cancel = p.close
	t.Cleanup(b.Close)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var lines []string
		if raw, err := p.call(5*time.Second, "console", nil); err == nil && json.Unmarshal(raw, &lines) == nil {
			t.Logf("%s's console (last lines):\n%s", name, strings.Join(lines, "\n"))
		}
	})
	// The driver says ready once Firefox runs.
	if _, err := p.wait(0, 60*time.Second); err != nil {
		b.Close()
		t.Fatalf("%s: start firefox: %v", name, err)
	}
	b.addScript(pageScript)
	return b
}

func (p *firefoxPage) read(stdout io.Reader) {
	defer close(p.answers)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var a firefoxAnswer
		if json.Unmarshal(sc.Bytes(), &a) == nil {
			p.answers <- a
		}
	}
}

// wait returns the answer to command id; answers to earlier commands that
// timed out are passed over.
func (p *firefoxPage) wait(id int, timeout time.Duration) (json.RawMessage, error) {
	deadline := time.After(timeout)
	for {
		select {
		case a, ok := <-p.answers:
			if !ok {
				return nil, fmt.Errorf("the Firefox driver ended: %s", p.stderr.String())
			}
			if a.ID != id {
				continue
			}
			if a.Error != "" {
				return nil, errors.New(a.Error)
			}
			return a.Value, nil
		case <-deadline:
			return nil, fmt.Errorf("no answer from the Firefox driver within %v", timeout)
		}
	}
}

func (p *firefoxPage) call(timeout time.Duration, op string, arg map[string]string) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	cmd := map[string]any{"id": p.next, "op": op}
	for k, v := range arg {
		cmd[k] = v
	}
	line, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("write to the Firefox driver: %w (%s)", err, p.stderr.String())
	}
	return p.wait(p.next, timeout)
}

func (p *firefoxPage) open(url string) error {
	_, err := p.call(30*time.Second, "open", map[string]string{"url": url})
	return err
}

func (p *firefoxPage) eval(js string) (json.RawMessage, error) {
	return p.call(10*time.Second, "eval", map[string]string{"js": js})
}

func (p *firefoxPage) addScript(js string) error {
	_, err := p.call(10*time.Second, "script", map[string]string{"js": js})
	return err
}

// close ends the driver (it closes Firefox when its stdin ends), killing it
// if it does not end within 10 s.
func (p *firefoxPage) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stdin == nil {
		return
	}
	_ = p.stdin.Close()
	p.stdin = nil
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// canvasCamera replaces the page's camera with a canvas of c at
// width×height, 30 fps, drawn as the Chromium cameras' files are (media_test.go):
// flat c, and along the top sixth a moving block pattern with fresh noise
// every frame, so that the encoder works at realistic rates. Firefox's own fake
// camera is a flat colour drifting through hues, which neither says who it is
// nor costs an encoder anything. The microphone stays Firefox's fake one (or
// withMicrophone's).
func canvasCamera(c colour, width, height int) string {
	return fmt.Sprintf(`(() => {
	const md = navigator.mediaDevices;
	if (!md) return;
	const native = md.getUserMedia.bind(md);
	const W = %d, H = %d, fill = 'rgb(%d,%d,%d)';
	const makeTrack = () => {
		const canvas = document.createElement('canvas');
		canvas.width = W; canvas.height = H;
		const g = canvas.getContext('2d');
		const pw = Math.floor(W / 4), ph = Math.floor(H / 6), cell = 8;
		const start = performance.now();
		const draw = () => {
			const t = (performance.now() - start) / 1000;
			g.fillStyle = fill;
			g.fillRect(0, 0, W, H);
			const x0 = Math.floor((t * W / 2) %% (W - pw));
			for (let y = 0; y < ph; y += cell) {
				for (let x = 0; x < pw; x += cell) {
					const v = Math.floor(Math.random() * 256);
					g.fillStyle = 'rgb(' + v + ',' + (255 - v) + ',' + ((v * 7) & 255) + ')';
					g.fillRect(x0 + x, y, cell, cell);
				}
			}
		};
		draw();
		setInterval(draw, 1000 / 30);
		return canvas.captureStream(30).getVideoTracks()[0];
	};
	md.getUserMedia = async (c) => {
		const stream = c && c.audio ? await native({audio: c.audio}) : new MediaStream();
		if (c && c.video) stream.addTrack(makeTrack());
		return stream;
	};
})()`, width, height, c.R, c.G, c.B)
}
