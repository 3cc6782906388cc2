package validator

import (
	"fmt"
	"regexp"
	"regexp/syntax"
)

// Limits on a form definition. Forms come from agents, so what a form may cost is bounded
// before anything in it is compiled: the bytes of its JSON, its fields and options, and the
// regular expressions it carries. Each limit broken is a Problem naming the limit.
//
// A pattern is checked in time linear in its program size times the length of the value
// (RE2), about 6 ns per instruction and character in the worst case on a 2-core machine. So a
// patterned field's values are at most MaxPatternedLength characters, and the form's patterns
// together may cost at most PatternBudget instruction-characters: checking a whole answer
// stays within tens of milliseconds however the form is built.
const (
	MaxFormBytes       = 64 << 10  // a form's or schema's JSON
	MaxFields          = 100       // fields in one form
	MaxOptions         = 500       // options of one select or multi_select field
	MaxPatternBytes    = 1000      // one pattern's source
	MaxPatternProgram  = 2000      // one pattern's compiled program, in instructions
	MaxPatternedLength = 1000      // characters of a value checked against a pattern
	PatternBudget      = 4_000_000 // sum over patterned fields of program size x max length
)

// compilePattern compiles an RE2 pattern after checking that its source and its program are
// within bounds, without ever building a program larger than the bound. It returns the
// compiled expression and its program size.
func compilePattern(pattern string) (*regexp.Regexp, int, error) {
	if len(pattern) > MaxPatternBytes {
		return nil, 0, fmt.Errorf("has a pattern of %d bytes; the limit is %d", len(pattern), MaxPatternBytes)
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, fmt.Errorf("has an invalid pattern: %v", err)
	}
	tooBig := fmt.Errorf("has a pattern that compiles to more than %d instructions (repetitions such as {1000} multiply its size); simplify it", MaxPatternProgram)
	// An upper estimate first, so an expression that would expand past the bound is never
	// expanded; then the exact size.
	if programBound(tree, 4*MaxPatternProgram) > 4*MaxPatternProgram {
		return nil, 0, tooBig
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, 0, fmt.Errorf("has an invalid pattern: %v", err)
	}
	if len(prog.Inst) > MaxPatternProgram {
		return nil, 0, tooBig
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("has an invalid pattern: %v", err)
	}
	return re, len(prog.Inst), nil
}

// programBound bounds from above the size of the program re compiles to (its instructions
// plus the program's own fail and match), stopping once past limit.
func programBound(re *syntax.Regexp, limit int) int {
	return min(programEstimate(re, limit)+2, limit+1)
}

// programEstimate bounds from above the number of instructions re compiles to, stopping
// (and returning a value over limit) as soon as it passes limit.
func programEstimate(re *syntax.Regexp, limit int) int {
	sub := func(i int) int { return programEstimate(re.Sub[i], limit) }
	clampAdd := func(a, b int) int { return min(a+b, limit+1) }
	switch re.Op {
	case syntax.OpLiteral:
		return min(len(re.Rune)+1, limit+1)
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return clampAdd(sub(0), 2)
	case syntax.OpRepeat:
		n := re.Max
		if n < 0 {
			n = re.Min + 1
		}
		s := sub(0) + 2
		if n > 0 && s > (limit+1)/n {
			return limit + 1
		}
		return min(n*s+1, limit+1)
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for i := range re.Sub {
			total = clampAdd(total, sub(i)+1)
		}
		return total
	}
	return 2
}
