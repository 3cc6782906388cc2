package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/validator"
)

func compiledWithLabel(t *testing.T, label string) *validator.Compiled {
	c, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "a", Type: validator.Text, Label: label}}})
	require.NoError(t, err)
	return c
}

// The cache is bounded by what its forms cost, not by how many there are.
func TestFormCacheIsBoundedByCost(t *testing.T) {
	small := compiledWithLabel(t, "x")
	budget := 10 * small.Cost()
	c := newFormCache(budget, 1000)
	for i := range 50 {
		c.add(formKey{byte(i)}, compiledWithLabel(t, "x"))
		_, cost := c.size()
		require.LessOrEqual(t, cost, budget)
	}
	n, cost := c.size()
	assert.Equal(t, 10, n, "as many as the budget holds, though the count allows 1000")
	assert.Equal(t, 10*small.Cost(), cost)
	_, ok := c.get(formKey{49})
	assert.True(t, ok, "the newest stay")
	_, ok = c.get(formKey{0})
	assert.False(t, ok, "the oldest went")

	big := compiledWithLabel(t, strings.Repeat("y", budget))
	c.add(formKey{200}, big)
	_, ok = c.get(formKey{200})
	assert.False(t, ok, "a form costing more than an eighth of the budget is not kept")
	n2, cost2 := c.size()
	assert.Equal(t, n, n2)
	assert.Equal(t, cost, cost2)

	c.add(formKey{49}, compiledWithLabel(t, "x")) // already there: counted once
	_, cost3 := c.size()
	assert.Equal(t, cost, cost3)
}

func TestCostGrowsWithWhatAFormHolds(t *testing.T) {
	plain := compiledWithLabel(t, "x")
	patterned, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "a", Type: validator.Text, Pattern: "^(?:a?){600}$", MaxLength: validator.Ptr(10)}}})
	require.NoError(t, err)
	assert.Greater(t, patterned.Cost(), plain.Cost()+100_000, "a program of 1,800 instructions weighs")
	var opts []validator.Option
	for i := range 400 {
		opts = append(opts, validator.Option{Value: fmt.Sprint(i)})
	}
	sel, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "s", Type: validator.Select, Options: opts}}})
	require.NoError(t, err)
	assert.Greater(t, sel.Cost(), plain.Cost()+400*64)
}
