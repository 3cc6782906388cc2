package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/elicitd/elicitd/validator"
)

// Load reads every NAME.json file of the directories given and adds each as the template
// NAME: all of them, or, when anything is wrong, none. Its *Error then lists every problem
// of every file: a name NamePattern does not allow, JSON that does not parse (with its line
// and column) or has a key the form language does not know, a form that does not compile
// (each of validator.Compile's problems, naming its field) or that has a default on a field
// asked on elicitd's page, a name already taken (by a template added before, or by a file
// of another directory), and an override its builtin's Fits refuses. A directory that
// cannot be read is an error too, naming it.
//
// Skipped are files whose names do not end in ".json" or start with a dot (editors'
// temporary files), and anything that is not a regular file or a link to one:
// subdirectories, dangling links, FIFOs, sockets, devices (Load never waits on one). A
// directory given twice is read once. A file replaces a builtin of its name (AddBuiltin),
// if the builtin's Fits accepts it.
func (s *Set) Load(dirs ...string) error {
	var ps problems
	var found []*Template
	seen := map[string]string{} // name -> the file of this Load that has it
	loaded := map[string]bool{} // the directories read, cleaned: one given twice is read once
	for _, dir := range dirs {
		if loaded[filepath.Clean(dir)] {
			continue
		}
		loaded[filepath.Clean(dir)] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			ps.add(ErrInvalid, dir, "", "", "cannot read the directory: %v", unwrapPath(err))
			continue
		}
		for _, e := range entries {
			file := filepath.Join(dir, e.Name())
			name, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if info, err := os.Stat(file); err != nil || !info.Mode().IsRegular() {
				continue // a subdirectory, a dangling link, a FIFO, a socket, a device
			}
			if other, dup := seen[name]; dup {
				ps.add(ErrDuplicate, file, name, "", "the name %q is taken: %s defines it too", name, other)
				continue
			}
			seen[name] = file
			t, fileProblems := s.read(name, file)
			ps = append(ps, fileProblems...)
			if t != nil {
				found = append(found, t)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range found {
		if err := s.free(t.Name, t.Source); err != nil {
			ps = append(ps, err.(*Error).Problems...)
		}
	}
	if len(ps) > 0 {
		return sorted(ps).err()
	}
	for _, t := range found {
		if b, ok := s.builtins[t.Name]; ok {
			t.Builtin, t.Tool = true, b.Tool
		}
		s.byName[t.Name] = t
	}
	return nil
}

// read reads, parses and compiles one template file, and checks it against the builtin it
// replaces, if any.
func (s *Set) read(name, file string) (*Template, problems) {
	var ps problems
	if !NamePattern.MatchString(name) {
		ps.add(ErrName, file, name, "", "the name %q (the file's name without .json) is not allowed: a name is 1 to 64 lower-case letters, digits, '_' and '-', starting with a letter or a digit", name)
		return nil, ps
	}
	data, err := readAtMost(file, validator.MaxFormBytes)
	if err != nil {
		ps.add(ErrInvalid, file, name, "", "%v", err)
		return nil, ps
	}
	form, p := parse(data)
	if p != nil {
		p.File, p.Name = file, name
		return nil, append(ps, *p)
	}
	t, ps := compile(name, file, form)
	if t == nil {
		return nil, ps
	}
	t.JSON = data
	s.mu.RLock()
	b, isBuiltin := s.builtins[name]
	s.mu.RUnlock()
	if isBuiltin && b.Fits != nil {
		if err := b.Fits(t.Definition()); err != nil {
			var de *validator.DefinitionError
			if errors.As(err, &de) {
				for _, p := range de.Problems {
					ps.add(ErrInvalid, file, name, p.Field, "%s", p.Message)
				}
			} else {
				ps.add(ErrInvalid, file, name, "form", "%v", err)
			}
			return nil, ps
		}
	}
	return t, nil
}

// readAtMost reads a regular file of at most limit bytes. It opens without blocking, so a
// FIFO put in the file's place after Load looked at it is refused rather than waited on.
func readAtMost(file string, limit int) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("is over %d bytes; a form's JSON is at most %d", limit, limit)
	}
	return data, nil
}

// unwrapPath drops the path from an *fs.PathError: the problem names the file already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parse decodes a form from its JSON as validator.ParseForm does (unknown keys refused),
// saying where in the file the JSON goes wrong.
func parse(data []byte) (validator.Form, *Problem) {
	var f validator.Form
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&f)
	if err == nil {
		end := int(dec.InputOffset())
		if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
			p := at(data, len(data)-len(rest), "has more after the form's closing brace; a file holds one form")
			return f, &p
		}
		return f, nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		p := at(data, int(syntax.Offset)-1, "the JSON does not parse: %s", syntax.Error()) // Offset counts the bad byte
		return f, &p
	case errors.As(err, &typ):
		var where string
		switch key, inField := strings.CutPrefix(typ.Field, "fields."); {
		case typ.Field == "":
			where = "the form"
		case inField:
			where = fmt.Sprintf("a field's %q", key)
		default:
			where = fmt.Sprintf("the form's %q", typ.Field)
		}
		// Offset is where the value ends: the column is just after it.
		p := at(data, int(typ.Offset), "%s must be %s, not %s", where, jsonKind(typ.Type.Kind().String()), jsonKind(typ.Value))
		return f, &p
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		p := at(data, len(data), "the JSON ends before the form does")
		return f, &p
	}
	if key, ok := unknownKey(err); ok {
		p := at(data, keyOffset(data, key), "unknown key %q: the form language has no such key (see docs/forms.md)", key)
		return f, &p
	}
	p := Problem{Field: "form", Message: "is not valid form JSON: " + err.Error(), kind: ErrInvalid}
	return f, &p
}

// at is a problem of bad JSON at byte offset off of data (0-based), with its line and
// column (1-based).
func at(data []byte, off int, format string, args ...any) Problem {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return Problem{Line: line, Column: col, Message: fmt.Sprintf(format, args...), kind: ErrInvalid}
}

// jsonKind names a Go kind, or a JSON value's kind as encoding/json names it, for a person.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "struct", "map", "object":
		return "an object"
	case "number", "int", "int64", "float64", "int8", "int16", "int32", "uint", "uint64", "uint32", "uint16", "uint8", "float32":
		return "a number"
	}
	return kind
}

var unknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// unknownKey returns the key encoding/json names in its unknown-field error.
func unknownKey(err error) (string, bool) {
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// keyOffset returns the offset of the first place data has key as an object's key, or 0.
func keyOffset(data []byte, key string) int {
	quoted, _ := json.Marshal(key)
	for i := 0; ; {
		j := bytes.Index(data[i:], quoted)
		if j < 0 {
			return 0
		}
		i += j + len(quoted)
		if rest := bytes.TrimLeft(data[i:], " \t\r\n"); len(rest) > 0 && rest[0] == ':' {
			return i - len(quoted)
		}
	}
}

// sorted returns ps ordered by file, then as found.
func sorted(ps problems) problems {
	slices.SortStableFunc(ps, func(a, b Problem) int { return strings.Compare(a.File, b.File) })
	return ps
}
