package validator_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v "github.com/elicitd/elicitd/validator"
)

var (
	pdfBytes = []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")
	pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
)

func fileForm(t *testing.T, f v.Field) *v.Compiled {
	t.Helper()
	c, err := v.Compile(v.Form{Fields: []v.Field{f}})
	require.NoError(t, err)
	return c
}

func TestAnUploadIsCheckedByItsBytes(t *testing.T) {
	c := fileForm(t, v.Field{Name: "doc", Type: v.File, Label: "Signed contract", Required: true, Accept: []string{"application/pdf"}, MaxBytes: 1024})

	data, errs := c.Validate(map[string]any{"doc": &v.Upload{Name: `C:\Users\ada\contract.pdf`, Type: "image/png", Bytes: pdfBytes}})
	require.Empty(t, errs)
	u := data["doc"].(*v.Upload)
	sum := sha256.Sum256(pdfBytes)
	assert.Equal(t, v.Upload{Name: "contract.pdf", Type: "application/pdf", Size: int64(len(pdfBytes)), SHA256: hex.EncodeToString(sum[:]), Bytes: pdfBytes}, *u,
		"the type is sniffed, not what the browser claimed; the path is dropped")

	_, errs = c.Validate(map[string]any{"doc": &v.Upload{Name: "contract.pdf", Type: "application/pdf", Bytes: pngBytes}})
	require.Len(t, errs, 1)
	assert.Equal(t, "Signed contract: is a file of type image/png; expected application/pdf", errs[0].Message)

	_, errs = c.Validate(map[string]any{"doc": &v.Upload{Name: "big.pdf", Bytes: append(pdfBytes, make([]byte, 1024)...)}})
	require.Len(t, errs, 1)
	assert.Equal(t, "max_bytes", errs[0].Constraint)
	assert.Contains(t, errs[0].Message, "the limit is 1.0 KiB")

	_, errs = c.Validate(map[string]any{"doc": "contract.pdf"})
	require.Len(t, errs, 1)
	assert.Equal(t, "Signed contract: must be a file uploaded through elicitd's page", errs[0].Message)

	_, errs = c.Validate(map[string]any{"doc": &v.Upload{}})
	require.Len(t, errs, 1)
	assert.Equal(t, "required", errs[0].Constraint, "an empty upload is no answer")
}

func TestAcceptTakesWildcardsAndKinds(t *testing.T) {
	images := fileForm(t, v.Field{Name: "pic", Type: v.File, Accept: []string{"image/*"}})
	_, errs := images.Validate(map[string]any{"pic": &v.Upload{Name: "a.png", Bytes: pngBytes}})
	assert.Empty(t, errs)
	_, errs = images.Validate(map[string]any{"pic": &v.Upload{Name: "a.png", Bytes: pdfBytes}})
	assert.Len(t, errs, 1)

	text := fileForm(t, v.Field{Name: "data", Type: v.File, Accept: []string{"text/plain"}})
	data, errs := text.Validate(map[string]any{"data": &v.Upload{Name: "a.json", Bytes: []byte(`{"a": 1}`)}})
	require.Empty(t, errs, "JSON is a kind of text")
	assert.Equal(t, "application/json", data["data"].(*v.Upload).Type)

	anything := fileForm(t, v.Field{Name: "any", Type: v.File})
	data, errs = anything.Validate(map[string]any{"any": &v.Upload{Name: "x", Bytes: []byte{0, 1, 2}}})
	require.Empty(t, errs)
	assert.Equal(t, "application/octet-stream", data["any"].(*v.Upload).Type)
	assert.Equal(t, int64(v.DefaultMaxFileBytes), anything.AskedFields()[0].MaxBytes)
}

func TestAnUploadAsJSONIsItsMetadataAndBase64(t *testing.T) {
	b, err := json.Marshal(&v.Upload{Name: "a.txt", Type: "text/plain", Size: 2, SHA256: "ab", Bytes: []byte("hi")})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"a.txt","type":"text/plain","size":2,"sha256":"ab","base64":"aGk="}`, string(b))
}

func TestSplitForPageAsksThePlainFieldsFirst(t *testing.T) {
	c, err := v.Compile(v.Form{Fields: []v.Field{
		{Name: "user", Type: v.Text, Required: true},
		{Name: "password", Type: v.Text, Widget: "password", Required: true},
		{Name: "id", Type: v.File},
	}})
	require.NoError(t, err)
	require.True(t, c.NeedsPage())

	plain := c.SplitForPage()
	require.NotNil(t, plain)
	assert.False(t, plain.NeedsPage())
	assert.JSONEq(t, `{"type":"object","properties":{"user":{"type":"string","title":"user"}},"required":["user"]}`, string(plain.WireSchema()))
	data, errs := plain.Validate(map[string]any{"user": " ada "})
	require.Empty(t, errs)

	page := plain.Next(data)
	require.NotNil(t, page)
	assert.True(t, page.NeedsPage())
	assert.Equal(t, []string{"password", "id"}, names(page.AskedFields()))
	all, errs := page.Validate(map[string]any{"password": "hunter2"})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"user": "ada", "password": "hunter2"}, all, "one answer: the plain round's kept")
	assert.Nil(t, page.Next(all))

	pageOnly, err := v.Compile(v.Form{Fields: []v.Field{{Name: "password", Type: v.Text, Sensitive: true}}})
	require.NoError(t, err)
	assert.Nil(t, pageOnly.SplitForPage(), "nothing to ask in form mode")
	ruled, err := v.CompileJSON([]byte(`{"fields":[{"name":"a","type":"text"},{"name":"b","type":"text","sensitive":true,"compare":{"op":"ne","field":"a"}}]}`))
	require.NoError(t, err)
	assert.Nil(t, ruled.SplitForPage(), "a rule across the two parts keeps them together, on the page")
}

func names(fs []v.Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// Asking says in one call what a round asks, what of it needs the page, and how to split it.
func TestAskingSaysWhatARoundAsksAndHow(t *testing.T) {
	c, err := v.Compile(v.Form{Fields: []v.Field{
		{Name: "user", Type: v.Text, Required: true},
		{Name: "password", Type: v.Text, Widget: "password", Required: true},
		{Name: "id", Type: v.File},
	}})
	require.NoError(t, err)
	a := c.Asking()
	assert.Equal(t, []string{"user", "password", "id"}, names(a.Fields))
	assert.Equal(t, []string{"password", "id"}, names(a.Page))
	require.NotNil(t, a.Split)
	assert.Equal(t, []string{"user"}, names(a.Split.Asking().Fields), "the form-mode part")
	assert.Empty(t, a.Split.Asking().Page)

	plain, err := v.Compile(v.Form{Fields: []v.Field{{Name: "user", Type: v.Text}}})
	require.NoError(t, err)
	a = plain.Asking()
	assert.Equal(t, []string{"user"}, names(a.Fields))
	assert.Empty(t, a.Page)
	assert.Nil(t, a.Split, "nothing for the page")

	secret, err := v.Compile(v.Form{Fields: []v.Field{{Name: "pin", Type: v.Text, Sensitive: true}}})
	require.NoError(t, err)
	a = secret.Asking()
	assert.Equal(t, []string{"pin"}, names(a.Page))
	assert.Nil(t, a.Split, "nothing for form mode")
}
