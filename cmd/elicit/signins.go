package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/oauth2"
)

// signIns is where elicit keeps the sign-ins it has made, one file per server (its --url),
// in the user's config directory: $XDG_CONFIG_HOME/elicit/sign-ins on Linux, ~/Library/Application
// Support/elicit/sign-ins on macOS, %AppData%\elicit\sign-ins on Windows. The directory is
// private to the user (0700) and every file in it is written whole, mode 0600, by a rename:
// another elicit reading it sees the old sign-in or the new one, never half of one.
//
// Without a config directory ($HOME unset, say) nothing is kept: elicit still signs in, for
// the one run.
type signIns struct {
	dir string
	err error // why there is no dir, or nil
}

// userSignIns returns the sign-ins of the user running elicit.
func userSignIns() *signIns {
	config, err := os.UserConfigDir()
	if err != nil {
		return &signIns{err: fmt.Errorf("cannot keep the sign-in: no config directory to keep it in (%w)", err)}
	}
	return &signIns{dir: filepath.Join(config, "elicit", "sign-ins")}
}

// signInRecord is one kept sign-in: what elicit needs to send the server its access token
// and, once that has expired, to ask the authorization server for a fresh one, without a
// browser. It holds secrets (the tokens, and the client secret if dynamic registration gave
// one): it is never printed or logged.
type signInRecord struct {
	Server       string           `json:"server"` // the --url signed in to
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	AuthURL      string           `json:"authorization_endpoint"`
	TokenURL     string           `json:"token_endpoint"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

// config is the OAuth client configuration the record was made with, to refresh its token.
func (r *signInRecord) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     r.ClientID,
		ClientSecret: r.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: r.AuthStyle},
		Scopes:       r.Scopes,
	}
}

// path is the file of server's sign-in: a hash of the URL names it, as a URL holds
// characters no file name may.
func (s *signIns) path(server string) string {
	sum := sha256.Sum256([]byte(server))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// load returns server's kept sign-in, or nil if there is none. A file that cannot be read
// as one (damaged, or another server's) is reported, and counts as none: elicit signs in
// again and replaces it.
func (s *signIns) load(server string) (*signInRecord, error) {
	if s.err != nil {
		return nil, nil
	}
	name := s.path(server)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the kept sign-in %s: %w", name, err)
	}
	var r signInRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Token == nil || r.TokenURL == "" {
		return nil, fmt.Errorf("the kept sign-in %s is damaged (%s); elicit signs in again", name, why(err, "it has no token"))
	}
	if r.Server != server {
		return nil, fmt.Errorf("the kept sign-in %s is for %q, not %q; elicit signs in again", name, r.Server, server)
	}
	return &r, nil
}

func why(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// save keeps r, replacing any sign-in kept for its server.
func (s *signIns) save(r *signInRecord) error {
	if s.err != nil {
		return s.err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("cannot keep the sign-in: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".sign-in-*") // mode 0600 less the umask
	if err != nil {
		return fmt.Errorf("cannot keep the sign-in: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename, there is nothing left to remove
	// 0600 whatever the umask: one that takes the owner's bits (0600, say) would otherwise
	// leave a file the next run cannot read back.
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot keep the sign-in: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot keep the sign-in in %s: %w", s.dir, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot keep the sign-in in %s: %w", s.dir, err)
	}
	if err := os.Rename(f.Name(), s.path(r.Server)); err != nil {
		return fmt.Errorf("cannot keep the sign-in: %w", err)
	}
	return nil
}

// remove forgets server's sign-in and reports whether there was one.
func (s *signIns) remove(server string) (bool, error) {
	if s.err != nil {
		return false, s.err
	}
	err := os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// removeAll forgets every sign-in and returns how many there were.
func (s *signIns) removeAll() (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// keptTokens is a token source that keeps every new token it hands out (a refreshed one)
// in the sign-in's file, so that the next run starts from it. A token that cannot be kept
// is still used, with a warning (once) that the next run signs in again. Safe for
// concurrent use.
type keptTokens struct {
	base   oauth2.TokenSource
	store  *signIns
	stderr io.Writer

	mu     sync.Mutex
	record signInRecord // as last kept
	warned bool
}

func (k *keptTokens) Token() (*oauth2.Token, error) {
	tok, err := k.base.Token()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if old := k.record.Token; old != nil && old.AccessToken == tok.AccessToken && old.RefreshToken == tok.RefreshToken {
		return tok, nil
	}
	k.record.Token = tok
	if err := k.store.save(&k.record); err != nil && !k.warned {
		k.warned = true
		fmt.Fprintf(k.stderr, "elicit: warning: %v; the next run signs in again\n", err)
	}
	return tok, nil
}

// logout forgets the sign-in to server, or with server "" every sign-in, and says so on
// stderr. It returns elicit's exit status. Only the copy kept here is forgotten: the
// authorization server is not told.
func logout(server string, stderr io.Writer) int {
	return logoutFrom(userSignIns(), server, stderr)
}

func logoutFrom(store *signIns, server string, stderr io.Writer) int {
	if server == "" {
		n, err := store.removeAll()
		if err != nil {
			fmt.Fprintf(stderr, "elicit: logout: cannot forget the sign-ins in %s: %v\n", store.dir, err)
			return 1
		}
		fmt.Fprintf(stderr, "elicit: forgot %d sign-in(s)\n", n)
		return 0
	}
	had, err := store.remove(server)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "elicit: logout: cannot forget the sign-in to %s: %v\n", server, err)
		return 1
	case had:
		fmt.Fprintf(stderr, "elicit: signed out of %s\n", server)
	default:
		fmt.Fprintf(stderr, "elicit: not signed in to %s; nothing to forget\n", server)
	}
	return 0
}
