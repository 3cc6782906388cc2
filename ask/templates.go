package ask

import "github.com/google/jsonschema-go/jsonschema"

// WithInputSchema returns t publishing schema as its input schema in tools/list, in place of
// the one inferred from its In type: for a tool whose arguments take values known only when
// the server starts, such as ask_user's template names, listed as an enum. schema must have
// type "object". It changes only what clients are shown: a RawTool still reads its arguments
// itself, and a NewTool still checks them against the schema inferred from In.
func (t Tool) WithInputSchema(schema *jsonschema.Schema) Tool {
	t.schema = schema
	return t
}
