package ask

import (
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// keepForm is how a Question is asked by default: after an invalid answer the re-prompt asks only the fields
// at fault, and the valid answers are kept (validator.Compiled.Keep).
type keepForm struct{ *validator.Compiled }

var _ elicitation.Keeper = keepForm{}

func (f keepForm) Keep(content map[string]any) (map[string]any, []validator.FieldError, elicitation.CompiledForm) {
	data, errs, retry := f.Compiled.Keep(content)
	if retry == nil {
		return data, errs, nil
	}
	return data, errs, keepForm{retry}
}
