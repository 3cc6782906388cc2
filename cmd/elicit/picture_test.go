package main

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hinshun/vt10x"
)

// The README shows the form a newcomer's first command brings up: a picture of the emulated
// screen of the pty test that runs that command, kept current by that test.
const (
	picturePath      = "docs/elicit-form.svg"
	updatePictureEnv = "ELICIT_UPDATE_PICTURE"
)

// vt10x's attribute bits (its own are unexported).
const (
	vtReverse = 1 << 0
	vtBold    = 1 << 2
)

// shownTime is the time-left line, which differs run to run; the picture shows it fixed.
var shownTime = regexp.MustCompile(`You have \S+ to answer \(until \d\d:\d\d:\d\d\)\.`)

const fixedTime = "You have 10m0s to answer (until 14:30:00)."

// picture renders the screen as an SVG: each cell's character, colour and weight, trimmed
// to the part in use. Reverse video is drawn plain: the form's cursor blinks with it, and
// the picture must not depend on the instant it was taken.
func (s *screen) picture() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols, rows := s.vt.Size()
	grid := make([][]vt10x.Glyph, rows)
	used, width := 0, 0
	for y := range rows {
		grid[y] = make([]vt10x.Glyph, cols)
		var text strings.Builder
		for x := range cols {
			g := s.vt.Cell(x, y)
			if g.Mode&vtReverse != 0 {
				g.FG, g.BG = g.BG, g.FG
			}
			if g.Char == 0 {
				g.Char = ' '
			}
			grid[y][x] = g
			text.WriteRune(g.Char)
		}
		row := text.String()
		if loc := shownTime.FindStringIndex(row); loc != nil {
			// In cells: the match and the rest of its length are overwritten, padded with spaces.
			start, n := utf8.RuneCountInString(row[:loc[0]]), utf8.RuneCountInString(row[loc[0]:loc[1]])
			fixed := fixedTime + strings.Repeat(" ", max(n-len(fixedTime), 0))
			for i, c := range []rune(fixed) {
				grid[y][start+i].Char = c
			}
		}
		for x := cols - 1; x >= 0; x-- {
			if grid[y][x].Char != ' ' || grid[y][x].BG != vt10x.DefaultBG {
				used, width = y+1, max(width, x+1)
				break
			}
		}
	}
	const cw, ch, pad = 8.4, 18.0, 12.0
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">`+"\n",
		float64(width)*cw+2*pad, float64(used)*ch+2*pad)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" rx="6" fill="%s"/>`+"\n", rgb(vt10x.DefaultBG))
	for y := range used {
		row := grid[y][:width]
		for x := 0; x < width; {
			g := row[x]
			end := x + 1
			for end < width && row[end].FG == g.FG && row[end].BG == g.BG && row[end].Mode&vtBold == g.Mode&vtBold {
				end++
			}
			if g.BG != vt10x.DefaultBG {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"/>`+"\n", pad+float64(x)*cw, pad+float64(y)*ch, float64(end-x)*cw, ch, rgb(g.BG))
			}
			var text strings.Builder
			for _, c := range row[x:end] {
				text.WriteRune(c.Char)
			}
			if t := strings.TrimRight(text.String(), " "); t != "" {
				weight := ""
				if g.Mode&vtBold != 0 {
					weight = ` font-weight="bold"`
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s"%s xml:space="preserve">%s</text>`+"\n",
					pad+float64(x)*cw, pad+float64(y)*ch+14, rgb(g.FG), weight, html.EscapeString(t))
			}
			x = end
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// rgb is a terminal colour as CSS: the xterm 256-colour palette, 24-bit colours, and a dark
// theme's defaults.
func rgb(c vt10x.Color) string {
	switch {
	case c == vt10x.DefaultFG:
		return "#d0d0d0"
	case c == vt10x.DefaultBG:
		return "#1c1c1c"
	case c < 16:
		return [16]string{"#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
			"#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"}[c]
	case c < 232:
		level := func(v vt10x.Color) int { return [6]int{0, 95, 135, 175, 215, 255}[v] }
		i := c - 16
		return fmt.Sprintf("#%02x%02x%02x", level(i/36), level(i/6%6), level(i%6))
	case c < 256:
		v := 8 + 10*int(c-232)
		return fmt.Sprintf("#%02x%02x%02x", v, v, v)
	case c < 1<<24:
		return fmt.Sprintf("#%06x", int(c))
	}
	return "#d0d0d0"
}

// checkPicture compares the README's picture with got, or writes it when ELICIT_UPDATE_PICTURE
// is set. root is the repository's root.
func checkPicture(s *screen, root string, got []byte) {
	s.t.Helper()
	path := root + "/" + picturePath
	if os.Getenv(updatePictureEnv) != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(want, got) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.t.Errorf("%s is not the form the README's first command shows (%v); look at the screen below and, if it is right, rerun with %s=1 to update the picture:\n%s",
			picturePath, err, updatePictureEnv, s.vt.String())
	}
}
