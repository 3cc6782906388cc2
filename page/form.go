package page

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/elicitd/elicitd/validator"
)

// CSRFField is the name of the page form's CSRF token. A field is sent under FieldName of
// its name, so no field can take the token's place.
const CSRFField = "_csrf"

// FieldName is the name a field's input has on the page.
func FieldName(field string) string { return "f." + field }

// read (l.mu held) turns a submit as received into an answer's content, as the validator
// takes it: strings, a list for multi_select, an *Upload for a file. A secret or file left
// empty takes what was kept of it from the last submit.
func (l *Link) read(rc *received) map[string]any {
	content := map[string]any{}
	for _, f := range l.fields {
		key := FieldName(f.Name)
		switch f.Type {
		case validator.MultiSelect:
			if vs := rc.values[key]; len(vs) > 0 {
				list := make([]any, len(vs))
				for i, v := range vs {
					list[i] = v
				}
				content[f.Name] = list
			}
		case validator.File:
			if u := rc.files[f.Name]; u != nil {
				content[f.Name] = u
			}
		default:
			if v := rc.values.Get(key); v != "" {
				content[f.Name] = v
			}
		}
		if _, given := content[f.Name]; !given && f.NeedsPage() && !rc.over(f.Name) {
			if v, ok := l.kept[f.Name]; ok {
				content[f.Name] = v
			}
		}
	}
	return content
}

// labelOf is the label a field is shown with, as the validator's messages name it.
func labelOf(f validator.Field) string { return cmp.Or(f.Label, f.Name) }

// view is what the form template shows.
type view struct {
	Title, Message, CSRF string
	Problems             []validator.FieldError
	Fields               []fieldView
}

type fieldView struct {
	ID, Name, Label, Help, Error string
	Kind                         string // text, email, url, date, number, textarea, password, select, multi, bool, file
	Required                     bool
	Value                        string          // what to show again; never a secret's
	Chosen                       map[string]bool // a select's or multi_select's, a boolean's ("true"/"false")
	Options                      []validator.Option
	Placeholder, Accept          string
	Kept                         bool // a secret or file was kept from the last submit
	Step                         string
}

// view (l.mu held) builds the page for the fields asked now: form holds what was sent (nil
// on a first showing) and errs the problems found in it.
func (l *Link) view(form url.Values, errs []validator.FieldError) view {
	title := l.q.Title
	if title == "" {
		title = l.q.Form.Title()
	}
	if title == "" {
		title = "A question"
	}
	v := view{Title: title, Message: l.q.Message, CSRF: l.csrf, Problems: errs}
	byField := map[string]string{}
	for _, fe := range errs {
		if _, ok := byField[fe.Field]; !ok {
			byField[fe.Field] = fe.Message
		}
	}
	for _, f := range l.fields {
		fv := fieldView{ID: "f-" + f.Name, Name: FieldName(f.Name), Label: labelOf(f), Help: f.Description,
			Error: byField[f.Name], Required: f.Required, Options: f.Options, Placeholder: f.Placeholder, Chosen: map[string]bool{}}
		_, fv.Kept = l.kept[f.Name]
		switch {
		case f.Type == validator.File:
			fv.Kind, fv.Accept = "file", strings.Join(f.Accept, ",")
		case f.NeedsPage():
			fv.Kind = "password" // never shown again
		case f.Type == validator.Select:
			fv.Kind = "select"
		case f.Type == validator.MultiSelect:
			fv.Kind = "multi"
		case f.Type == validator.Boolean:
			fv.Kind = "bool"
		case f.Type == validator.Number || f.Type == validator.Integer:
			fv.Kind, fv.Step = "number", "any"
			if f.Type == validator.Integer {
				fv.Step = "1"
			}
		case f.Widget == "multiline":
			fv.Kind = "textarea"
		case f.Type == validator.Email, f.Type == validator.URL, f.Type == validator.Date:
			fv.Kind = string(f.Type)
		default:
			fv.Kind = "text"
			if f.Type == validator.DateTime && fv.Placeholder == "" {
				fv.Placeholder = "2026-11-22T10:00:00Z"
			}
		}
		if fv.Kind != "password" && fv.Kind != "file" {
			if form != nil {
				for _, s := range form[fv.Name] {
					fv.Chosen[s] = true
				}
				fv.Value = form.Get(fv.Name)
			} else if f.Default != nil {
				fv.Value = fmt.Sprint(f.Default)
				fv.Chosen[fv.Value] = true
				if list, ok := f.Default.([]string); ok {
					for _, s := range list {
						fv.Chosen[s] = true
					}
				}
			}
		}
		v.Fields = append(v.Fields, fv)
	}
	return v
}

func (l *Link) render(w http.ResponseWriter, status int, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = formTmpl.Execute(w, v)
}

// notice is a page with a message only.
type notice struct {
	Title, Text string
	Done        bool
}

const style = `<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:1rem;color:#111;background:#fff}
main{max-width:36rem;margin:0 auto}
label,legend{display:block;font-weight:600;margin-top:1rem}
input:not([type=checkbox]):not([type=radio]),select,textarea{box-sizing:border-box;width:100%;font:inherit;padding:.4rem;border:1px solid #555;border-radius:4px}
.help{margin:.2rem 0;color:#444}
.error{margin:.2rem 0;color:#a00;font-weight:600}
[aria-invalid=true]{border-color:#a00;outline:2px solid #a00}
#problems{border:2px solid #a00;padding:.5rem 1rem;margin:1rem 0}
fieldset{border:0;padding:0;margin:0}
button{margin-top:1.5rem;font:inherit;padding:.5rem 1.5rem}
</style>`

var noticeTmpl = template.Must(template.New("notice").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>` + style + `</head>
<body><main><h1>{{.Title}}</h1><p id="notice"{{if .Done}} class="done"{{end}}>{{.Text}}</p></main></body></html>
`))

var formTmpl = template.Must(template.New("form").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>` + style + `</head>
<body><main>
<h1>{{.Title}}</h1>
{{with .Message}}<p id="message">{{.}}</p>{{end}}
{{with .Problems}}<div id="problems" role="alert"><p>Please fix {{len .}} problem{{if gt (len .) 1}}s{{end}}:</p><ul>
{{range .}}<li>{{if .Field}}<a href="#f-{{.Field}}">{{.Message}}</a>{{else}}{{.Message}}{{end}}</li>{{end}}
</ul></div>{{end}}
<form method="post" enctype="multipart/form-data" novalidate>
<input type="hidden" name="_csrf" value="{{.CSRF}}">
{{range .Fields}}<div class="field">
{{if or (eq .Kind "multi") (eq .Kind "bool")}}<fieldset id="{{.ID}}"{{if .Error}} aria-invalid="true"{{end}} aria-describedby="{{.ID}}-help {{.ID}}-error">
<legend>{{.Label}}{{if .Required}} (required){{end}}</legend>
{{- if eq .Kind "bool"}}
<label><input type="radio" name="{{.Name}}" value="true"{{if index .Chosen "true"}} checked{{end}}> Yes</label>
<label><input type="radio" name="{{.Name}}" value="false"{{if index .Chosen "false"}} checked{{end}}> No</label>
{{- else}}{{$f := .}}{{range .Options}}
<label><input type="checkbox" name="{{$f.Name}}" value="{{.Value}}"{{if index $f.Chosen .Value}} checked{{end}}> {{or .Title .Value}}</label>
{{- end}}{{end}}
</fieldset>
{{else}}<label for="{{.ID}}">{{.Label}}{{if .Required}} (required){{end}}</label>
{{if eq .Kind "select"}}<select id="{{.ID}}" name="{{.Name}}"{{if .Error}} aria-invalid="true"{{end}} aria-describedby="{{.ID}}-help {{.ID}}-error">
<option value="">Choose…</option>{{$f := .}}{{range .Options}}<option value="{{.Value}}"{{if index $f.Chosen .Value}} selected{{end}}>{{or .Title .Value}}</option>{{end}}
</select>
{{else if eq .Kind "textarea"}}<textarea id="{{.ID}}" name="{{.Name}}" rows="4"{{with .Placeholder}} placeholder="{{.}}"{{end}}{{if .Error}} aria-invalid="true"{{end}} aria-describedby="{{.ID}}-help {{.ID}}-error">{{.Value}}</textarea>
{{else if eq .Kind "file"}}<input type="file" id="{{.ID}}" name="{{.Name}}"{{with .Accept}} accept="{{.}}"{{end}}{{if .Error}} aria-invalid="true"{{end}} aria-describedby="{{.ID}}-help {{.ID}}-error">
{{else if eq .Kind "password"}}<input type="password" id="{{.ID}}" name="{{.Name}}" autocomplete="off"{{if .Error}} aria-invalid="true"{{end}} aria-describedby="{{.ID}}-help {{.ID}}-error">
{{else}}<input type="{{.Kind}}" id="{{.ID}}" name="{{.Name}}" value="{{.Value}}"{{with .Step}} step="{{.}}"{{end}}{{with .Placeholder}} placeholder="{{.}}"{{end}}{{if .Error}} aria-invalid="true"{{end}} aria-describedby="{{.ID}}-help {{.ID}}-error">
{{end}}{{end}}
{{if .Help}}<p class="help" id="{{.ID}}-help">{{.Help}}</p>{{end}}
{{if .Kept}}<p class="help" id="{{.ID}}-kept">Kept from your last try; leave it empty to keep it, or give a new one.</p>{{end}}
<p class="error" id="{{.ID}}-error">{{.Error}}</p>
</div>
{{end}}<button type="submit">Send</button>
</form>
</main></body></html>
`))
