package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

const tokenUsage = `podium token — mint an access token

The signing keys are the server's auth-keys: from --config FILE (or PODIUM_CONFIG)
and/or PODIUM_AUTH_KEYS, exactly as podium serve reads them.

Examples:
  podium token --room standup --identity alice@example.org --name Alice
  podium token --room standup --identity bob --perms subscribe --ttl 2h
  podium token --room '*' --identity ops --perms admin --ttl 15m     (admin API)
  podium token --room standup --identity carol --url https://meet.example.org/

Flags:
`

// tokenCommand is `podium token`: it prints a signed token (and a join link).
func tokenCommand(args []string) error {
	return runToken(args, os.Getenv, os.Stdout, os.Stderr, time.Now())
}

func runToken(args []string, getenv func(string) string, stdout, stderr io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, tokenUsage)
		fs.PrintDefaults()
	}
	configPath := fs.String("config", getenv("PODIUM_CONFIG"), "the server's YAML configuration file, for its auth-keys")
	roomName := fs.String("room", "", "the room the token admits to, or * for every room (required)")
	identity := fs.String("identity", "", "who the token is for (its subject), e.g. a user id or e-mail")
	name := fs.String("name", "", "display name; when set, it is the participant's name whatever the client asks")
	perms := fs.String("perms", "publish,subscribe", "permissions, comma-separated: publish, subscribe, admin")
	ttl := fs.Duration("ttl", 6*time.Hour, "how long the token may be used to join")
	keyID := fs.String("key", "", "id of the auth key to sign with (default: the first)")
	base := fs.String("url", "", "the server's URL: also print a join link for the room")
	e2ee := fs.Bool("e2ee", false, "the holder must encrypt end to end (join with #e2ee=<passphrase>), else e2ee-required")
	region := fs.String("region", "", "place the holder in this cluster region, whichever node it reaches (docs/cluster.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *roomName != auth.AnyRoom && !signal.ValidRoom(*roomName) {
		return errors.New("--room: give a room name (1-64 of A-Z a-z 0-9 _ . -) or *")
	}
	p, err := auth.ParsePermissions(*perms)
	if err != nil {
		return fmt.Errorf("--perms: %w", err)
	}
	if *ttl <= 0 {
		return errors.New("--ttl: must be positive")
	}
	if *region != "" && !auth.ValidRegion(*region) {
		return errors.New("--region: 1-32 of A-Z a-z 0-9 - _")
	}
	var cfgArgs []string
	if *configPath != "" {
		cfgArgs = []string{"--config", *configPath}
	}
	cfg, err := config.Load(cfgArgs, getenv)
	if err != nil {
		return err
	}
	keys := cfg.Keys()
	if len(keys) == 0 {
		return errors.New("no auth-keys configured: give --config with auth-keys, or set PODIUM_AUTH_KEYS")
	}
	key := keys[0]
	if *keyID != "" {
		found := false
		for _, k := range keys {
			if k.ID == *keyID {
				key, found = k, true
			}
		}
		if !found {
			return fmt.Errorf("--key: no auth key %q", *keyID)
		}
	}
	token, err := auth.Sign(key, auth.Claims{Room: *roomName, Identity: *identity, Name: *name, Permissions: p,
		E2EE: *e2ee, Region: *region, IssuedAt: now, Expires: now.Add(*ttl)})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	if *base != "" {
		if *roomName == auth.AnyRoom {
			return errors.New("--url: a join link needs a single --room")
		}
		q := url.Values{"token": {token}}
		if *name != "" {
			q.Set("name", *name) // the web client then joins at once, without its form
		}
		link := strings.TrimSuffix(*base, "/") + "/" + url.PathEscape(*roomName) + "?" + q.Encode()
		fmt.Fprintln(stdout, link)
	}
	fmt.Fprintf(stderr, "token for room %s, identity %q, permissions %s, key %s, valid until %s\n",
		*roomName, *identity, strings.Join(p.Names(), ","), key.ID, now.Add(*ttl).UTC().Format(time.RFC3339))
	return nil
}
