package ups_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/tools/ups"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeUPS speaks UPS's documented contract: a client-credentials token endpoint and JSON
// endpoints that want a bearer token. api decides each API answer.
type fakeUPS struct {
	t          *testing.T
	srv        *httptest.Server
	tokens     atomic.Int64 // token requests served
	calls      atomic.Int64 // API requests served
	expiresIn  string
	tokenGate  chan struct{} // if set, the token endpoint waits on it
	mu         sync.Mutex
	lastReq    *http.Request
	lastBody   []byte
	api        func(w http.ResponseWriter, r *http.Request, token string)
	tokenError int
}

func newFake(t *testing.T) *fakeUPS {
	f := &fakeUPS{t: t, expiresIn: "14399"}
	f.api = func(w http.ResponseWriter, _ *http.Request, _ string) {
		_, _ = w.Write([]byte(`{"ShipmentResponse":{"Response":{"ResponseStatus":{"Code":"1"}}}}`))
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUPS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/security/v1/oauth/token" {
		n := f.tokens.Add(1)
		if f.tokenGate != nil {
			<-f.tokenGate
		}
		id, secret, ok := r.BasicAuth()
		form, _ := url.ParseQuery(string(body))
		if f.tokenError != 0 || !ok || id != "id" || secret != "secret" || form.Get("grant_type") != "client_credentials" ||
			r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			w.WriteHeader(max(f.tokenError, http.StatusUnauthorized))
			_, _ = w.Write([]byte(`{"response":{"errors":[{"code":"250002","message":"Invalid Authentication Information."}]}}`))
			return
		}
		_, _ = fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":%q}`, n, f.expiresIn)
		return
	}
	f.calls.Add(1)
	f.mu.Lock()
	f.lastReq, f.lastBody = r, body
	f.mu.Unlock()
	const bearer = "Bearer "
	auth := r.Header.Get("Authorization")
	if len(auth) <= len(bearer) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	f.api(w, r, auth[len(bearer):])
}

func (f *fakeUPS) client(clk clock.Clock) *ups.Client {
	return ups.New(ups.Config{ClientID: "id", ClientSecret: "secret", BaseURL: f.srv.URL + "/", Clock: clk, AllowLocal: true})
}

var body = map[string]any{"ShipmentRequest": map[string]any{"Shipment": map[string]any{"Description": "books"}}}

func TestExactRequest(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	q := url.Values{"additionaladdressvalidation": {"city"}}
	out, err := c.Post(context.Background(), ups.ShipPath("v2409"), q, body, ups.CallOptions{TransID: "trans-1"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"ShipmentResponse":{"Response":{"ResponseStatus":{"Code":"1"}}}}`, string(out))

	f.mu.Lock()
	r, sent := f.lastReq, f.lastBody
	f.mu.Unlock()
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, "/api/shipments/v2409/ship", r.URL.Path)
	assert.Equal(t, "additionaladdressvalidation=city", r.URL.RawQuery)
	assert.Equal(t, "Bearer tok-1", r.Header.Get("Authorization"))
	assert.Equal(t, "trans-1", r.Header.Get("transId"))
	assert.Equal(t, "elicitd", r.Header.Get("transactionSrc"))
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"ShipmentRequest":{"Shipment":{"Description":"books"}}}`, string(sent))

	// Rating, with defaults for the headers: a fresh UUID transId.
	_, err = c.Post(context.Background(), ups.RatePath("v2409", "Shop"), nil, body, ups.CallOptions{TransactionSrc: "agent"})
	require.NoError(t, err)
	f.mu.Lock()
	r = f.lastReq
	f.mu.Unlock()
	assert.Equal(t, "/api/rating/v2409/Shop", r.URL.Path)
	assert.Empty(t, r.URL.RawQuery)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, r.Header.Get("transId"))
	assert.Equal(t, "agent", r.Header.Get("transactionSrc"))
	assert.EqualValues(t, 1, f.tokens.Load(), "the token is cached between calls")
}

func TestBaseURLs(t *testing.T) {
	base := func(c ups.Config) string { return ups.New(c).Endpoint("/x", nil) }
	assert.Equal(t, ups.CIEURL+"/x", base(ups.Config{}))
	assert.Equal(t, ups.CIEURL+"/x", base(ups.Config{Environment: "test"}))
	assert.Equal(t, ups.ProductionURL+"/x", base(ups.Config{Environment: "Production"}))
	assert.Equal(t, "http://sandbox:1/x", base(ups.Config{Environment: "production", BaseURL: "http://sandbox:1/"}))
	assert.Equal(t, "https://wwwcie.ups.com/api/rating/v2409/Rate?additionalinfo=timeintransit",
		ups.New(ups.Config{}).Endpoint(ups.RatePath("v2409", "Rate"), url.Values{"additionalinfo": {"timeintransit"}}))

	env := map[string]string{"CLIENT_ID": "old-id", "UPS_CLIENT_SECRET": "s", "ENVIRONMENT": "production", "UPS_ACCOUNT_NUMBER": "A1"}
	cfg, err := ups.ConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, ups.Config{ClientID: "old-id", ClientSecret: "s", Environment: "production", AccountNumber: "A1"}, cfg)
	assert.True(t, cfg.Configured())
	env["UPS_CLIENT_ID"] = "new-id"
	cfg, err = ups.ConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, "new-id", cfg.ClientID, "the UPS_ names win")
	assert.False(t, ups.Config{ClientID: "x"}.Configured())
}

func TestTokenRefreshesBeforeExpiry(t *testing.T) {
	f := newFake(t)
	f.expiresIn = "3600"
	clk := clock.NewMock()
	c := f.client(clk)
	call := func() {
		t.Helper()
		_, err := c.Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
		require.NoError(t, err)
	}
	call()
	clk.Add(3600*time.Second - 61*time.Second)
	call()
	assert.EqualValues(t, 1, f.tokens.Load(), "still more than 60 s left")
	clk.Add(time.Second)
	call()
	assert.EqualValues(t, 2, f.tokens.Load(), "refreshed 60 s before expiry")
}

func TestConcurrentCallersShareOneTokenRequest(t *testing.T) {
	f := newFake(t)
	f.tokenGate = make(chan struct{})
	c := f.client(nil)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			_, err := c.Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
			errs <- err
		})
	}
	// Hold the token request while the callers pile up behind it, then let it through (also
	// when the check fails, so a failure cannot hang the test).
	shared := assert.Eventually(t, func() bool { return f.tokens.Load() >= 1 }, 30*time.Second, time.Millisecond)
	close(f.tokenGate)
	wg.Wait()
	require.True(t, shared)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, f.tokens.Load())
	assert.EqualValues(t, 50, f.calls.Load())
}

func TestUnauthorizedForcesOneRefreshAndRetry(t *testing.T) {
	f := newFake(t)
	f.api = func(w http.ResponseWriter, _ *http.Request, token string) {
		if token == "tok-1" { // revoked on the server's side
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
	c := f.client(nil)
	out, err := c.Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":true}`, string(out))
	assert.EqualValues(t, 2, f.tokens.Load())
	assert.EqualValues(t, 2, f.calls.Load())

	// A 401 that persists is reported after the one retry, not retried forever.
	f.api = func(w http.ResponseWriter, _ *http.Request, _ string) { w.WriteHeader(http.StatusUnauthorized) }
	_, err = c.Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
	var apiErr *ups.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 401, apiErr.StatusCode)
	assert.EqualValues(t, 4, f.calls.Load())
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		status        int
		body          string
		code, message string
	}{
		{400, `{"response":{"errors":[{"code":"120100","message":"Missing or invalid shipper number"}]}}`, "120100", "Missing or invalid shipper number"},
		{422, `{"code":"9370701","message":"Invalid weight"}`, "9370701", "Invalid weight"},
		{403, `{"errorCode":"250003","message":"Invalid Access License"}`, "250003", "Invalid Access License"},
		{500, `upstream exploded`, "500", "UPS API returned HTTP 500"},
		{503, ``, "503", "UPS API returned HTTP 503"},
		{404, `{"unexpected":"shape"}`, "404", "UPS API returned HTTP 404"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			f := newFake(t)
			f.api = func(w http.ResponseWriter, _ *http.Request, _ string) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}
			_, err := f.client(nil).Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
			var apiErr *ups.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, c.status, apiErr.StatusCode)
			assert.Equal(t, c.code, apiErr.Code)
			assert.Equal(t, c.message, apiErr.Message)
			if c.body != "" {
				assert.NotNil(t, apiErr.Details)
			}
			b, err := json.Marshal(apiErr)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"status_code":`)
		})
	}
}

func TestTokenRefusedAndNetworkFailure(t *testing.T) {
	f := newFake(t)
	f.tokenError = http.StatusUnauthorized
	_, err := f.client(nil).Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
	require.ErrorIs(t, err, ups.ErrAuth)
	var apiErr *ups.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "250002", apiErr.Code)

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c := ups.New(ups.Config{ClientID: "id", ClientSecret: "secret", BaseURL: url, AllowLocal: true})
	_, err = c.Post(context.Background(), ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
	require.Error(t, err)
	assert.False(t, errors.As(err, &apiErr), "a network failure is not a UPS answer")
	assert.Contains(t, err.Error(), "requesting a token")
}

func TestTheCallHonoursItsContext(t *testing.T) {
	f := newFake(t)
	entered := make(chan struct{})
	f.api = func(w http.ResponseWriter, r *http.Request, _ string) {
		close(entered)
		<-r.Context().Done() // UPS is slow; the caller gives up
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()
	_, err := f.client(nil).Post(ctx, ups.ShipPath("v2409"), nil, body, ups.CallOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

// A setting UPS calls cannot use is refused, naming the variable and what it takes, instead of
// silently falling back to the test service.
func TestConfigFromEnvRefusesWhatItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		says string
	}{
		{map[string]string{"UPS_ENVIRONMENT": "prod"}, `UPS_ENVIRONMENT must be "test" (or "cie") or "production", got "prod"`},
		{map[string]string{"ENVIRONMENT": "bogus"}, `ENVIRONMENT must be "test" (or "cie") or "production", got "bogus"`},
		{map[string]string{"UPS_BASE_URL": "notaurl"}, `UPS_BASE_URL must be an https:// URL such as https://wwwcie.ups.com, got "notaurl"`},
		{map[string]string{"UPS_BASE_URL": "http://ups.example.com"}, "plain http only with ELICITD_UPS_ALLOW_LOCAL=1"},
		{map[string]string{"UPS_BASE_URL": "https://user:pw@ups.example.com"}, "UPS_BASE_URL must be"},
		{map[string]string{"ELICITD_UPS_ALLOW_LOCAL": "maybe"}, `ELICITD_UPS_ALLOW_LOCAL must be 1 or 0 (true or false), got "maybe"`},
	} {
		_, err := ups.ConfigFromEnv(func(k string) string { return tc.env[k] })
		require.Error(t, err, "%v", tc.env)
		assert.Contains(t, err.Error(), tc.says)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
	for _, env := range []map[string]string{
		{"UPS_ENVIRONMENT": "Production"}, {"UPS_ENVIRONMENT": "test"}, {"UPS_ENVIRONMENT": "CIE"},
		{"UPS_BASE_URL": "https://sandbox.example.com/"}, {"UPS_BASE_URL": "http://127.0.0.1:8080", "ELICITD_UPS_ALLOW_LOCAL": "1"},
	} {
		_, err := ups.ConfigFromEnv(func(k string) string { return env[k] })
		assert.NoError(t, err, "%v", env)
	}
}

// The client dials only public addresses and follows redirects only to https: a fake UPS on
// loopback (allowed as the configured base) that redirects to 127.0.0.2 is not followed there.
func TestRedirectToANonPublicAddressIsRefused(t *testing.T) {
	var hits atomic.Int64
	inner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	inner.Listener = l
	inner.Start()
	defer inner.Close()
	for _, target := range []string{inner.URL, "https://" + strings.TrimPrefix(inner.URL, "http://")} {
		outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
		}))
		c := ups.New(ups.Config{ClientID: "id", ClientSecret: "secret", BaseURL: outer.URL, AllowLocal: true})
		_, err = c.Post(context.Background(), ups.ShipPath("v2409"), nil, map[string]any{}, ups.CallOptions{})
		outer.Close()
		require.Error(t, err, target)
		assert.Regexp(t, "only https is followed|non-public address 127.0.0.2", err.Error())
	}
	assert.Zero(t, hits.Load(), "nothing reached the address behind the redirect")

	// Without AllowLocal even the configured base is refused when it is not public.
	local := httptest.NewServer(http.NotFoundHandler())
	defer local.Close()
	c := ups.New(ups.Config{ClientID: "id", ClientSecret: "secret", BaseURL: local.URL})
	_, err = c.Post(context.Background(), ups.ShipPath("v2409"), nil, map[string]any{}, ups.CallOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "non-public address 127.0.0.1")
}
