package templates_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/elicitd/elicitd/templates"
	"github.com/elicitd/elicitd/validator"
)

// A set of templates, one added in code and one from a directory. A directory with a bad
// file adds nothing, and says everything wrong with it; once fixed, it loads.
func Example() {
	set := templates.New()
	err := set.Add("contact", validator.Form{Title: "Contact", Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Label: "Name", Required: true},
		{Name: "email", Type: validator.Email, Label: "Email", Required: true},
	}})
	fmt.Println("add:", err)

	dir, err := os.MkdirTemp("", "templates")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	write := func(name, form string) { _ = os.WriteFile(filepath.Join(dir, name), []byte(form), 0o644) }
	write("delivery.json", `{"title": "Delivery", "fields": [
	  {"name": "city", "type": "text", "label": "City", "required": true},
	  {"name": "when", "type": "time", "label": "Delivery time"}]}`)

	var bad *templates.Error
	if err := set.Load(dir); errors.As(err, &bad) {
		for _, p := range bad.Problems {
			fmt.Printf("%s: field %q: %s\n", filepath.Base(p.File), p.Field, p.Message)
		}
	}
	fmt.Println("names:", set.Names())

	write("delivery.json", `{"title": "Delivery", "fields": [
	  {"name": "city", "type": "text", "label": "City", "required": true},
	  {"name": "when", "type": "date_time", "label": "Delivery time"}]}`)
	fmt.Println("load:", set.Load(dir))
	fmt.Println("names:", set.Names())
	delivery, _ := set.Get("delivery")
	fmt.Println(templates.URI(delivery.Name), delivery.Form.Title(), string(delivery.Form.WireSchema()))
	// Output:
	// add: <nil>
	// delivery.json: field "when": has unknown type "time"; expected one of text, number, integer, boolean, date, date_time, email, url, select, multi_select, file
	// names: [contact]
	// load: <nil>
	// names: [contact delivery]
	// elicitd://templates/delivery Delivery {"type":"object","properties":{"city":{"type":"string","title":"City"},"when":{"type":"string","title":"Delivery time","format":"date-time"}},"required":["city"]}
}
