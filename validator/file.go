package validator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// DefaultMaxFileBytes is a file field's size limit when it sets none: 10 MiB.
const DefaultMaxFileBytes = 10 << 20

// Upload is a file the person gave: the answer to a file field. A file is never asked in
// form mode (MCP forms have no file type): it comes through elicitd's page, in URL mode.
//
// The page fills in Name and Bytes; Validate sets Type from the bytes themselves (what the
// browser claimed is not trusted), Size and SHA256. As JSON it is its metadata and the bytes
// in base64: {"name", "type", "size", "sha256", "base64"}.
type Upload struct {
	Name   string `json:"name"`   // the file's name on the person's machine, without a path
	Type   string `json:"type"`   // the media type sniffed from the bytes, e.g. application/pdf
	Size   int64  `json:"size"`   // in bytes
	SHA256 string `json:"sha256"` // of the bytes, in hex
	Bytes  []byte `json:"base64"`
}

// String names the upload without its contents, for logs and messages.
func (u *Upload) String() string { return fmt.Sprintf("%s (%s, %d bytes)", u.Name, u.Type, u.Size) }

// NeedsPage reports whether a field can only be asked through elicitd's page (URL mode): a
// sensitive field, which the MCP spec forbids asking in form mode, or a file.
func (f Field) NeedsPage() bool { return f.Sensitive || f.Widget == "password" || f.Type == File }

// compileFile checks a file field's own settings.
func compileFile(cf *compiledField, bad func(string, ...any)) {
	if cf.Type != File {
		if len(cf.Accept) > 0 || cf.MaxBytes != 0 {
			bad("has accept or max_bytes, but those apply only to file fields")
		}
		return
	}
	if cf.MaxBytes < 0 {
		bad("has max_bytes %d; it must be positive", cf.MaxBytes)
	}
	if cf.MaxBytes == 0 {
		cf.MaxBytes = DefaultMaxFileBytes
	}
	if cf.Default != nil {
		bad("is a file field with a default; a file cannot have one")
	}
	for j, a := range cf.Accept {
		t, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(a)), "/")
		if !ok || t == "" || sub == "" || t == "*" || strings.ContainsAny(t+sub, " ;,") {
			bad(`accept entry %d must be a media type such as "application/pdf" or "image/*", got %q`, j+1, a)
			continue
		}
		cf.Accept[j] = t + "/" + sub
	}
}

// upload checks a file answer: its size against the limit and its sniffed type against the
// accept list.
func (f *compiledField) upload(raw any) (any, *FieldError, bool) {
	var u Upload
	switch v := raw.(type) {
	case *Upload:
		if v == nil {
			return nil, nil, true
		}
		u = *v
	case Upload:
		u = v
	default:
		return nil, f.fail("type", "must be a file uploaded through elicitd's page"), false
	}
	if u.Name == "" && len(u.Bytes) == 0 {
		return nil, nil, true
	}
	if int64(len(u.Bytes)) > f.MaxBytes {
		return nil, f.fail("max_bytes", "is %s; the limit is %s", byteSize(int64(len(u.Bytes))), byteSize(f.MaxBytes)), false
	}
	m := mimetype.Detect(u.Bytes)
	u.Name = baseName(u.Name)
	u.Size = int64(len(u.Bytes))
	u.Type = mediaType(m)
	sum := sha256.Sum256(u.Bytes)
	u.SHA256 = hex.EncodeToString(sum[:])
	if len(f.Accept) > 0 && !accepts(f.Accept, m) {
		return nil, f.fail("accept", "is a file of type %s; expected %s", u.Type, strings.Join(f.Accept, " or ")), false
	}
	return &u, nil, false
}

// mediaType is a detected type without its parameters (text/plain, not text/plain; charset=utf-8).
func mediaType(m *mimetype.MIME) string {
	t, _, err := mime.ParseMediaType(m.String())
	if err != nil {
		return "application/octet-stream"
	}
	return t
}

// accepts reports whether m, or a type it is a kind of (JSON is a kind of text/plain),
// matches one of accept ("image/*" matches any image).
func accepts(accept []string, m *mimetype.MIME) bool {
	for ; m != nil; m = m.Parent() {
		for _, a := range accept {
			if t, ok := strings.CutSuffix(a, "/*"); ok {
				if strings.HasPrefix(m.String(), t+"/") {
					return true
				}
			} else if m.Is(a) {
				return true
			}
		}
	}
	return false
}

// baseName drops any path a browser sent with a file's name.
func baseName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// byteSize words a size for a person: "12 bytes", "3.4 MiB".
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Asking is what a form asks now, and how it may be asked: the one answer a caller that puts
// the form to a person needs before its round goes out (Compiled.Asking).
type Asking struct {
	// Fields are the fields asked now, in order (AskedFields).
	Fields []Field
	// Page are those of Fields that only elicitd's page may ask (Field.NeedsPage): none,
	// and the round may go in form mode; some, and it needs the page.
	Page []Field
	// Split, when the round asks plain fields beside Page's and may be cut in two, asks the
	// plain ones alone, in form mode; its Next asks Page's, on the page, keeping the answers
	// given (SplitForPage). Nil: every field goes the same way.
	Split *Compiled
}

// Asking returns what c asks now and how it may be asked, in one pass.
func (c *Compiled) Asking() Asking {
	var a Asking
	for i := range c.fields {
		if f := &c.fields[i]; f.stage == stageAsk && !f.kept {
			a.Fields = append(a.Fields, f.Field)
			if f.NeedsPage() {
				a.Page = append(a.Page, f.Field)
			}
		}
	}
	if len(a.Page) > 0 && len(a.Page) < len(a.Fields) {
		a.Split = c.SplitForPage()
	}
	return a
}

// NeedsPage reports whether a field the form asks now can only be asked through elicitd's
// page (see Field.NeedsPage).
func (c *Compiled) NeedsPage() bool {
	for i := range c.fields {
		if f := &c.fields[i]; f.stage == stageAsk && !f.kept && f.NeedsPage() {
			return true
		}
	}
	return false
}

// AskedFields returns the fields the form asks now, in order: not those answered in an
// earlier round, nor conditional fields not yet due. Constraints are as compiled (a file's
// MaxBytes is set, a patterned field's MaxLength is bounded). The caller must not modify
// them.
func (c *Compiled) AskedFields() []Field {
	var out []Field
	for i := range c.fields {
		if f := &c.fields[i]; f.stage == stageAsk && !f.kept {
			out = append(out, f.Field)
		}
	}
	return out
}

// SplitForPage returns the form that asks, of the fields asked now, only those that can be
// asked in form mode; its Next asks the rest (the page's), keeping the answers given. It
// returns nil when there is no such split: every field needs the page, none does, or the
// form has conditions or cross-field rules, whose fields are then all asked on the page
// together so that the rules see every answer at once.
func (c *Compiled) SplitForPage() *Compiled {
	if c.rules || c.conditional || c.checks {
		return nil
	}
	plain, page := 0, 0
	for i := range c.fields {
		if f := &c.fields[i]; f.stage == stageAsk && !f.kept {
			if f.NeedsPage() {
				page++
			} else {
				plain++
			}
		}
	}
	if plain == 0 || page == 0 {
		return nil
	}
	r := *c
	r.fields = slices.Clone(c.fields)
	for i := range r.fields {
		if f := &r.fields[i]; f.stage == stageAsk && !f.kept && f.NeedsPage() {
			f.stage = stageLater
		}
	}
	r.asked()
	return &r
}
