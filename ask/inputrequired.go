package ask

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputRequired is a 2026-07-28 input_required result as the spec has it: without the
// "content" the SDK writes as null (its CallToolResult always carries the field).
type inputRequired struct{ *mcp.CallToolResult }

// ToolResult is the result r encodes (for a middleware outside, package tasks).
func (r inputRequired) ToolResult() *mcp.CallToolResult { return r.CallToolResult }

// nullContent is how the SDK's encoding starts when _meta is empty: Content is the first
// field after the omitempty _meta.
const nullContent = `{"content":null,`

// MarshalJSON encodes the result once, without its _meta, cuts the leading null content and
// puts _meta back: one pass on a path every pull-era round takes. Should the SDK's layout
// change, it falls back to decoding the members and dropping the field.
func (r inputRequired) MarshalJSON() ([]byte, error) {
	bare := *r.CallToolResult
	bare.Meta = nil
	b, err := bare.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte(nullContent)) {
		return r.dropContent()
	}
	out := append(make([]byte, 0, len(b)+128), '{')
	if len(r.Meta) > 0 {
		meta, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, `"_meta":`...), meta...), ',')
	}
	return append(out, b[len(nullContent):]...), nil
}

// dropContent is the general way: decode the members, drop a null content, encode again.
func (r inputRequired) dropContent() ([]byte, error) {
	b, err := r.CallToolResult.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	if string(fields["content"]) == "null" {
		delete(fields, "content")
	}
	return json.Marshal(fields)
}
