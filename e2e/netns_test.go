//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
)

// A Link is a network namespace joined to the host by a veth pair: a browser
// launched in it (launchIn) reaches the server only through the pair, whose host
// side's egress — the browser's downlink — the shaping methods (shaping_test.go)
// act on. Its methods belong to the test's goroutine.
type Link struct {
	t       *testing.T
	ip, tc  string
	NS      string     // namespace name, podium-<pid>-<n>
	HostDev string     // host end of the pair, pdh<pid>-<n>
	NSDev   string     // namespace end, pdn<pid>-<n>
	HostIP  netip.Addr // on HostDev: where the server listens
	NSIP    netip.Addr // on NSDev: the browser's only address

	// MediaIP, with behindRelay, is a host address the namespace has no route
	// to: the server's media listens there for the relay (relay_test.go).
	MediaIP netip.Addr
	relayed bool
	capped  bool // a tbf is installed (Cap; Uncap keeps a fast one)
}

// LinkOption changes a link when it is created.
type LinkOption func(*Link)

var linkSeq atomic.Int32

// Names carry the creating process's id, so a later run can tell leftovers of a
// crashed one (dead pid) from links of a concurrent run (live pid).
var staleName = regexp.MustCompile(`^(?:podium-|pdh)(\d+)-\d+$`)

// Links of all processes take their /30 from 10.213.0.0/16, under a file lock.
const (
	subnetBase      = 10<<24 | 213<<16
	subnetCount     = 1 << 14
	relaySubnetBase = 10<<24 | 214<<16 // Link.MediaIP
)

// newShapedLink creates a namespace with a veth pair to the host, addresses from
// a free /30 of 10.213.0.0/16 (host .1, namespace .2) and lo and the pair up.
// Cleanup removes both. Without root, ip or tc it skips — in CI (CI set) it fails,
// as CI runs as root and must run these tests. Create it before the server
// (startServerReachableFrom): the media port binds the addresses existing then.
func newShapedLink(t *testing.T, opts ...LinkOption) *Link {
	t.Helper()
	l := &Link{t: t}
	l.ip, l.tc = netAdmin(t)
	for _, o := range opts {
		o(l)
	}
	n := linkSeq.Add(1)
	pid := os.Getpid()
	l.NS = fmt.Sprintf("podium-%d-%d", pid, n)
	l.HostDev = fmt.Sprintf("pdh%d-%d", pid, n)
	l.NSDev = fmt.Sprintf("pdn%d-%d", pid, n)
	if len(l.HostDev) > unix.IFNAMSIZ-1 {
		t.Fatalf("interface name %s too long", l.HostDev)
	}

	unlock := lockLinks(t)
	defer unlock()
	l.removeStale()
	k, err := freeSubnet()
	if err != nil {
		t.Fatal(err)
	}
	base := uint32(subnetBase + 4*k)
	l.HostIP, l.NSIP = addr4(base+1), addr4(base+2)

	if out, err := exec.Command(l.ip, "netns", "add", l.NS).CombinedOutput(); err != nil {
		skipOrFail(t, "cannot create a network namespace (needs CAP_SYS_ADMIN): ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		// Deleting one end of the pair deletes both; the namespace goes when
		// its last process (Chromium's, closed by now) has exited.
		_ = exec.Command(l.ip, "link", "del", l.HostDev).Run()
		if out, err := exec.Command(l.ip, "netns", "del", l.NS).CombinedOutput(); err != nil {
			t.Logf("ip netns del %s: %v: %s", l.NS, err, out)
		}
	})
	hostCIDR, nsCIDR := l.HostIP.String()+"/30", l.NSIP.String()+"/30"
	l.run(l.ip, "link", "add", l.HostDev, "type", "veth", "peer", "name", l.NSDev, "netns", l.NS)
	l.run(l.ip, "addr", "add", hostCIDR, "dev", l.HostDev)
	l.run(l.ip, "link", "set", l.HostDev, "up")
	l.run(l.ip, "-n", l.NS, "addr", "add", nsCIDR, "dev", l.NSDev)
	l.run(l.ip, "-n", l.NS, "link", "set", l.NSDev, "up")
	l.run(l.ip, "-n", l.NS, "link", "set", "lo", "up")
	if l.relayed {
		// From a /16 of its own, at the /30's index: unique while the /30 is.
		l.MediaIP = addr4(uint32(relaySubnetBase + 4*k + 1))
		l.run(l.ip, "addr", "add", l.MediaIP.String()+"/32", "dev", l.HostDev)
	}
	t.Logf("link %s: host %s %s, namespace %s %s", l.NS, l.HostDev, hostCIDR, l.NSDev, nsCIDR)
	return l
}

// netAdmin finds ip and tc, and checks we may use them.
func netAdmin(t *testing.T) (ip, tc string) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "network namespaces need root (CI runs as root)")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		skipOrFail(t, "ip not installed (apt-get install -y iproute2)")
	}
	tc, err = exec.LookPath("tc")
	if err != nil {
		skipOrFail(t, "tc not installed (apt-get install -y iproute2)")
	}
	return ip, tc
}

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func (l *Link) run(name string, args ...string) {
	l.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		l.t.Fatalf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// lockLinks serialises link creation between test processes (the /30 choice).
func lockLinks(t *testing.T) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "podium-e2e-links.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	return func() { _ = f.Close() } // closing releases the lock
}

// removeStale deletes namespaces and host veths left by dead processes.
func (l *Link) removeStale() {
	dead := func(name string) bool {
		m := staleName.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, _ := strconv.Atoi(m[1])
		return pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	if ifaces, err := net.Interfaces(); err == nil {
		for _, i := range ifaces {
			if dead(i.Name) {
				l.t.Logf("removing stale veth %s", i.Name)
				_ = exec.Command(l.ip, "link", "del", i.Name).Run()
			}
		}
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if dead(e.Name()) {
			l.t.Logf("removing stale namespace %s", e.Name())
			_ = exec.Command(l.ip, "netns", "del", e.Name()).Run()
		}
	}
}

// freeSubnet returns the index of a /30 of 10.213.0.0/16 no local address is in.
func freeSubnet() (uint32, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, err
	}
	used := map[uint32]bool{}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if v4 := ipn.IP.To4(); v4 != nil {
			u := uint32(v4[0])<<24 | uint32(v4[1])<<16 | uint32(v4[2])<<8 | uint32(v4[3])
			if u>>16 == subnetBase>>16 {
				used[(u-subnetBase)/4] = true
			}
		}
	}
	for k := uint32(0); k < subnetCount; k++ {
		if !used[k] {
			return k, nil
		}
	}
	return 0, errors.New("no free /30 left in 10.213.0.0/16")
}

func addr4(u uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
}

// inNS runs fn on an OS thread moved into the link's namespace: sockets fn opens
// live there (and keep working from any goroutine afterwards). The thread is
// never unlocked, so it ends with its goroutine instead of returning to the pool.
func (l *Link) inNS(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open("/run/netns/" + l.NS)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", l.NS, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// launchIn starts a browser (as launch does) inside the link's namespace: the
// command becomes `ip netns exec <ns> chromium …`. chromedp talks to it over
// --remote-debugging-pipe (file descriptors 3 and 4, which ip netns exec passes
// on), so DevTools never touches the network. Without secureOrigin the page has
// no camera or microphone (an http origin other than loopback is not secure):
// a pure receiver.
func launchIn(t *testing.T, l *Link, name string, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	inNS := chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
		cmd.Args = append([]string{l.ip, "netns", "exec", l.NS, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = l.ip
		// What chromedp does without ModifyCmdFunc: the browser dies with us.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	})
	return launch(t, name, append([]chromedp.ExecAllocatorOption{inNS}, extra...)...)
}

// startServerReachableFrom starts a server whose HTTP and media listen on the
// link's host address as well (HTTP only there; media on loopback too), in dev
// mode: a non-loopback address without auth-keys is refused otherwise.
func startServerReachableFrom(t *testing.T, l *Link, changes ...func(*config.Config)) *server.Server {
	t.Helper()
	return startServerWith(t, func(c *config.Config) {
		c.HTTP = net.JoinHostPort(l.HostIP.String(), "0")
		c.Dev = true
		c.MediaIPs = []string{"127.0.0.1", l.HostIP.String()}
		for _, change := range changes {
			change(c)
		}
	})
}

// secureOrigin lets a browser use its camera and microphone on srv's page,
// served over http from the link's address (not a secure origin by default).
func secureOrigin(srv *server.Server) chromedp.ExecAllocatorOption {
	return chromedp.Flag("unsafely-treat-insecure-origin-as-secure", strings.TrimSuffix(srv.URL(), "/"))
}
