package ask

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fast encoding says exactly what the SDK's does, less the null content, with or without
// _meta; and the general way agrees with it.
func TestInputRequiredIsTheSDKsResultWithoutContent(t *testing.T) {
	for name, meta := range map[string]mcp.Meta{
		"no meta": nil,
		"meta":    {"io.modelcontextprotocol/serverInfo": map[string]any{"name": "elicitd", "version": "1"}},
	} {
		r := &mcp.CallToolResult{RequestState: "s", InputRequests: mcp.InputRequestMap{
			"elicit-1": &mcp.ElicitParams{Mode: "form", Message: "m", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}}}`)}}}
		r.Meta = meta
		sdk, err := json.Marshal(r)
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(sdk, &want))
		require.Contains(t, want, "content", "the SDK writes content: null")
		delete(want, "content")

		bare := *r
		bare.Meta = nil
		plain, err := bare.MarshalJSON()
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(plain), nullContent), "%s: the fast way applies to this SDK: %s", name, plain)

		for way, encode := range map[string]func() ([]byte, error){
			"fast": inputRequired{r}.MarshalJSON, "general": inputRequired{r}.dropContent,
		} {
			b, err := encode()
			require.NoError(t, err, name, way)
			var got map[string]any
			require.NoError(t, json.Unmarshal(b, &got), "%s %s: %s", name, way, b)
			assert.Equal(t, want, got, "%s %s", name, way)
		}
		assert.Equal(t, meta, r.Meta, "the result itself is not changed")
	}
}
