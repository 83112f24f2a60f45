package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// speechWAV makes a looping, speech-like signal: a voiced harmonic sound cut into
// syllables (4 per second) grouped into sentences with pauses, as a microphone would
// hear a person talking. Chromium's fake capture device plays it in a loop.
func speechWAV(t *testing.T) string {
	t.Helper()
	voice := "0.6*(sin(2*PI*140*t)+0.6*sin(2*PI*280*t)+0.4*sin(2*PI*420*t)+0.2*sin(2*PI*700*t))/2.2"
	syllables := "gt(sin(2*PI*4*t),-0.3)"
	sentences := "gt(sin(2*PI*0.25*t),-0.7)"
	noise := "0.002*sin(2*PI*50*t)"
	return ffmpegWAV(t, "speech.wav", voice+"*"+syllables+"*"+sentences+"+"+noise)
}

// silenceWAV is a quiet room: a faint hum, no speech.
func silenceWAV(t *testing.T) string {
	t.Helper()
	return ffmpegWAV(t, "silence.wav", "0.002*sin(2*PI*50*t)")
}

func ffmpegWAV(t *testing.T, name, expr string) string {
	t.Helper()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal("ffmpeg not installed (apt-get install -y ffmpeg)")
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi",
		// Commas separate filters in a filter graph, so those inside the expression are escaped.
		"-i", "aevalsrc="+strings.ReplaceAll(expr, ",", `\,`)+":s=48000:d=16", "-ac", "1", "-ar", "48000", "-y", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", name, err, msg)
	}
	return out
}
