package docscheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
)

// CodeFacts gathers the facts from the repository at root: the configuration
// from internal/config, the other commands' flags and the signaling message
// types from the Go source, Chromium's flags from the e2e harness, and the
// metrics from a scrape of a server started in this process.
func CodeFacts(ctx context.Context, root string) (Facts, error) {
	f := Facts{Commands: map[string]map[string]bool{}}
	var err error
	if f.Keys, f.Commands["serve"], err = serveFlags(); err != nil {
		return f, err
	}
	if err := commandFlags(filepath.Join(root, "cmd/podium"), f.Commands); err != nil {
		return f, err
	}
	if f.Foreign, err = stringArgs(filepath.Join(root, "e2e"), "Flag"); err != nil {
		return f, err
	}
	if f.Messages, err = constants(filepath.Join(root, "internal/signal"), "Type"); err != nil {
		return f, err
	}
	if f.Metrics, err = scrape(ctx); err != nil {
		return f, err
	}
	return f, nil
}

// serveFlags lists the configuration keys with their environment variables
// and defaults, and the flags podium serve registers: each is tried on
// config.LoadSwitches, whose flag set is the one podium serve parses.
func serveFlags() ([]Key, map[string]bool, error) {
	var keys []Key
	def := reflect.ValueOf(config.Default())
	names := []string{"config", "print-config"}
	for i := range def.NumField() {
		name := def.Type().Field(i).Tag.Get("key")
		keys = append(keys, Key{Name: name, Env: config.EnvName(name), Default: def.Field(i).Interface()})
		names = append(names, name)
	}
	flags := map[string]bool{"h": true, "help": true}
	stderr := os.Stderr
	defer func() { os.Stderr = stderr }()
	os.Stderr, _ = os.Open(os.DevNull) // the flag package prints usage on every refusal
	for _, name := range names {
		_, _, err := config.LoadSwitches([]string{"--" + name + "=x"}, func(string) string { return "" })
		if err != nil && strings.Contains(err.Error(), "flag provided but not defined") {
			return nil, nil, fmt.Errorf("config key %s is not a flag of podium serve", name)
		}
		flags[name] = true
	}
	return keys, flags, nil
}

// commandFlags reads the flag sets of cmd/podium: flag.NewFlagSet("bench
// forward", …) names the command, and the calls on that set in the same
// function register its flags (fs.String("name", …), fs.IntVar(&v, "name", …)).
func commandFlags(dir string, into map[string]map[string]bool) error {
	files, err := parseDir(dir)
	if err != nil {
		return err
	}
	for _, file := range files {
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			sets := map[string]string{} // variable → command
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
					return true
				}
				if call, ok := as.Rhs[0].(*ast.CallExpr); ok && isCall(call, "flag", "NewFlagSet") && len(call.Args) > 0 {
					if name, ok := stringLit(call.Args[0]); ok {
						if id, ok := as.Lhs[0].(*ast.Ident); ok {
							sets[id.Name] = name
							if into[name] == nil {
								into[name] = map[string]bool{"h": true, "help": true}
							}
						}
					}
				}
				return true
			})
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				recv, ok := sel.X.(*ast.Ident)
				if !ok || sets[recv.Name] == "" {
					return true
				}
				// fs.String("name", …) or fs.StringVar(&v, "name", …), fs.Var(v, "name", …).
				arg := 0
				if strings.HasSuffix(sel.Sel.Name, "Var") {
					arg = 1
				}
				if len(call.Args) > arg {
					if name, ok := stringLit(call.Args[arg]); ok {
						into[sets[recv.Name]][name] = true
					}
				}
				return true
			})
		}
	}
	if len(into) < 5 {
		return fmt.Errorf("%s: found the flag sets of %d commands (%v), want serve, token, load, bench forward and bench lastn", dir, len(into), keys(mapKeys(into)))
	}
	return nil
}

// stringArgs collects the first argument of every call of a function or
// method named fn when it is a string literal (chromedp.Flag("name", …)).
func stringArgs(dir, fn string) (map[string]bool, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, file := range files {
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == fn {
					if s, ok := stringLit(call.Args[0]); ok {
						out[s] = true
					}
				}
			}
			return true
		})
	}
	return out, nil
}

// constants collects the string values of the package's constants whose
// names start with prefix (signal.TypeOffer = "offer").
func constants(dir, prefix string) (map[string]bool, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, file := range files {
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if strings.HasPrefix(name.Name, prefix) && i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i]); ok {
							out[s] = true
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s… string constants", dir, prefix)
	}
	return out, nil
}

// parseDir parses the package's Go files, tests included (the e2e harness is
// all tests).
func parseDir(dir string) ([]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("%s: no Go files (%v)", dir, err)
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func isCall(call *ast.CallExpr, pkg, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func mapKeys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// scrape starts a server on loopback, has one client send a bad signaling
// message (so the per-code error counter has a sample), and reads the metric
// families and their label names from /metrics.
func scrape(ctx context.Context) (map[string]map[string]bool, error) {
	cfg := config.Default()
	cfg.HTTP, cfg.UDPPort, cfg.TCPPort = "127.0.0.1:0", 0, 0
	cfg.MediaIPs = []string{"127.0.0.1"}
	srv, err := server.New(cfg, server.Options{Client: fstest.MapFS{"index.html": {Data: []byte("<!doctype html>")}}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL(), "http")+"ws", nil)
	if err != nil {
		return nil, fmt.Errorf("signaling: %w", err)
	}
	_ = ws.Write(ctx, websocket.MessageText, []byte("{"))
	_, _, _ = ws.Read(ctx) // the error, before the server closes
	_ = ws.CloseNow()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.MetricsURL(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", srv.MetricsURL(), resp.Status)
	}
	return families(resp.Body)
}

// families reads the Prometheus text format: each family's name (from # TYPE,
// so a histogram is one family) and the label names of its samples.
func families(r io.Reader) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	var current string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			current = strings.Fields(rest)[0]
			out[current] = map[string]bool{}
			continue
		}
		if line == "" || line[0] == '#' || current == "" {
			continue
		}
		name, labels, _ := strings.Cut(strings.Fields(line)[0], "{")
		if !strings.HasPrefix(name, current) {
			continue
		}
		for _, pair := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
			if l, _, ok := strings.Cut(pair, "="); ok && l != "le" && l != "quantile" {
				out[current][l] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("/metrics: no metric families")
	}
	return out, nil
}
