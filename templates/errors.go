package templates

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinels matched by an *Error that holds a problem of their kind (errors.Is).
var (
	// ErrName: a template's name is not one NamePattern allows.
	ErrName = errors.New("templates: name not allowed")
	// ErrDuplicate: a name that is already taken, by a template added in code or by
	// another file.
	ErrDuplicate = errors.New("templates: duplicate name")
	// ErrInvalid: a form that cannot be read or compiled, or an override its builtin's Fits
	// refuses.
	ErrInvalid = errors.New("templates: invalid form")
)

// Problem is one thing wrong with a template.
type Problem struct {
	File string // the template's file, as its path; empty for a template added in code
	Name string // the template's name
	// Field is the field at fault, by its name ("fields[2]" when it has none); "form" for
	// the form as a whole; empty for a problem of the file itself (its name, its JSON).
	Field string
	// Line and Column (1-based) say where in the file bad JSON is; 0 when unknown.
	Line, Column int
	Message      string

	kind error // ErrName, ErrDuplicate or ErrInvalid
}

// String words the problem for a person: where, then what.
//
//	/etc/elicitd/templates/contact.json: field "email": has unknown type "mail"; expected one of ...
//	/etc/elicitd/templates/contact.json: line 4, column 18: invalid character '}' looking for beginning of value
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.File != "":
		b.WriteString(p.File)
	default:
		fmt.Fprintf(&b, "template %q", p.Name)
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, ": line %d, column %d", p.Line, p.Column)
	}
	switch p.Field {
	case "":
	case "form":
		b.WriteString(": form")
	default:
		b.WriteString(": field " + strconv.Quote(p.Field))
	}
	b.WriteString(": " + p.Message)
	return b.String()
}

// Error is every problem found in the templates being added; none of them was added.
type Error struct {
	Problems []Problem
}

// Error is one line when there is one problem, else a count followed by one indented line
// per problem.
func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Is reports whether some problem is of kind target: ErrName, ErrDuplicate or ErrInvalid.
func (e *Error) Is(target error) bool {
	for _, p := range e.Problems {
		if p.kind == target {
			return true
		}
	}
	return false
}

// problems collects the problems of one Add or Load.
type problems []Problem

func (ps *problems) add(kind error, file, name, field, format string, args ...any) {
	*ps = append(*ps, Problem{File: file, Name: name, Field: field, Message: fmt.Sprintf(format, args...), kind: kind})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: ps}
}
