package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

const (
	testAccess  = "access-0123456789-never-shown"
	testRefresh = "refresh-0123456789-never-shown"
)

func testRecord(server string) *signInRecord {
	return &signInRecord{
		Server: server, ClientID: "client-1", AuthURL: "https://as.example.com/authorize",
		TokenURL: "https://as.example.com/token", AuthStyle: oauth2.AuthStyleInParams, Scopes: []string{"mcp"},
		Token: &oauth2.Token{AccessToken: testAccess, RefreshToken: testRefresh, TokenType: "Bearer",
			Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
}

// A sign-in is kept in the user's config directory, private to them, and read back whole.
func TestSignInsKeepOnePrivateFilePerServer(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", config)
	store := userSignIns()
	require.NoError(t, store.err)
	want, err := os.UserConfigDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(want, "elicit", "sign-ins"), store.dir)

	const server = "https://mcp.example.com/mcp"
	got, err := store.load(server)
	require.NoError(t, err)
	assert.Nil(t, got, "nothing kept yet")

	require.NoError(t, store.save(testRecord(server)))
	require.NoError(t, store.save(testRecord("https://other.example.com/mcp")))
	got, err = store.load(server)
	require.NoError(t, err)
	assert.Equal(t, testRecord(server), got)

	if runtime.GOOS != "windows" {
		info, err := os.Stat(store.path(server))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the file is the user's alone")
		info, err = os.Stat(store.dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "and so is its directory")
	}
	entries, err := os.ReadDir(store.dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "one file per server, no temporary file left behind")

	had, err := store.remove(server)
	require.NoError(t, err)
	assert.True(t, had)
	_, err = os.Stat(store.path(server))
	assert.ErrorIs(t, err, os.ErrNotExist, "logout removes the file")
	had, err = store.remove(server)
	require.NoError(t, err)
	assert.False(t, had, "removing twice is no error")

	n, err := store.removeAll()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the other server's")
	n, err = store.removeAll()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// A file that is not a sign-in for this server counts as none, and says why, without a token.
func TestSignInsRefuseADamagedOrForeignFile(t *testing.T) {
	store := &signIns{dir: t.TempDir()}
	const server = "https://mcp.example.com/mcp"
	require.NoError(t, os.WriteFile(store.path(server), []byte(`{"server": `), 0o600))
	got, err := store.load(server)
	assert.Nil(t, got)
	require.ErrorContains(t, err, "is damaged")

	other := testRecord("https://other.example.com/mcp")
	require.NoError(t, store.save(other))
	require.NoError(t, os.Rename(store.path(other.Server), store.path(server)))
	got, err = store.load(server)
	assert.Nil(t, got)
	require.ErrorContains(t, err, `is for "https://other.example.com/mcp", not "https://mcp.example.com/mcp"`)
	assert.NotContains(t, err.Error(), testAccess)

	none := &signIns{err: os.ErrNotExist}
	got, err = none.load(server)
	assert.Nil(t, got)
	assert.NoError(t, err, "no config directory: nothing kept, and elicit signs in")
	assert.ErrorIs(t, none.save(testRecord(server)), os.ErrNotExist)
}

type tokenList []*oauth2.Token

func (l *tokenList) Token() (*oauth2.Token, error) {
	tok := (*l)[0]
	if len(*l) > 1 {
		*l = (*l)[1:]
	}
	return tok, nil
}

// A refreshed token is kept, so that the next run starts from it; one that cannot be kept
// is still used, with one warning that does not show it.
func TestKeptTokensKeepARefreshedToken(t *testing.T) {
	store := &signIns{dir: t.TempDir()}
	const server = "https://mcp.example.com/mcp"
	record := testRecord(server)
	require.NoError(t, store.save(record))
	refreshed := &oauth2.Token{AccessToken: "access-refreshed-0123456789", RefreshToken: testRefresh, TokenType: "Bearer"}
	base := tokenList{record.Token, refreshed}
	var stderr strings.Builder
	k := &keptTokens{base: &base, store: store, stderr: &stderr, record: *record}

	tok, err := k.Token()
	require.NoError(t, err)
	assert.Equal(t, testAccess, tok.AccessToken)
	tok, err = k.Token()
	require.NoError(t, err)
	assert.Equal(t, refreshed.AccessToken, tok.AccessToken)
	got, err := store.load(server)
	require.NoError(t, err)
	assert.Equal(t, refreshed.AccessToken, got.Token.AccessToken, "the refreshed token is kept")
	assert.Equal(t, "client-1", got.ClientID, "with the client it was refreshed by")

	store.dir = filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(store.dir, nil, 0o600)) // a file where the directory should be
	base = tokenList{{AccessToken: "access-third-0123456789"}, {AccessToken: "access-fourth-0123456789"}}
	for range 2 {
		tok, err = k.Token()
		require.NoError(t, err, "a token that cannot be kept is still used")
	}
	assert.Equal(t, "access-fourth-0123456789", tok.AccessToken)
	assert.Equal(t, 1, strings.Count(stderr.String(), "warning: cannot keep the sign-in"), stderr.String())
	assert.Contains(t, stderr.String(), "the next run signs in again")
	assert.NotContains(t, stderr.String(), "access-")
}

func TestLogout(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", config)
	store := userSignIns()
	const server = "https://mcp.example.com/mcp"
	require.NoError(t, store.save(testRecord(server)))
	require.NoError(t, store.save(testRecord("https://other.example.com/mcp")))

	var stderr strings.Builder
	assert.Equal(t, 0, logout(server, &stderr))
	assert.Equal(t, "elicit: signed out of https://mcp.example.com/mcp\n", stderr.String())
	stderr.Reset()
	assert.Equal(t, 0, logout(server, &stderr))
	assert.Equal(t, "elicit: not signed in to https://mcp.example.com/mcp; nothing to forget\n", stderr.String())
	stderr.Reset()
	assert.Equal(t, 0, logout("", &stderr))
	assert.Equal(t, "elicit: forgot 1 sign-in(s)\n", stderr.String())
	got, err := store.load("https://other.example.com/mcp")
	require.NoError(t, err)
	assert.Nil(t, got)
}
