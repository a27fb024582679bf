package strictyaml

// Helpers that read goccy/go-yaml syntax nodes.

import (
	"math"
	"reflect"
	"regexp"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// nodePos is where n starts: for a block mapping, its first key.
func nodePos(n ast.Node) (line, col int, ok bool) {
	if isNil(n) {
		return 0, 0, false
	}
	switch x := n.(type) {
	case *ast.MappingNode:
		if !x.IsFlowStyle && len(x.Values) > 0 && x.Values[0] != nil {
			return nodePos(x.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return nodePos(x.Key)
	case *ast.MappingKeyNode:
		if x.Start == nil {
			return nodePos(x.Value)
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 {
		return 0, 0, false
	}
	return tk.Position.Line, max(tk.Position.Column, 1), true
}

func keyName(k ast.MapKeyNode) (string, bool) {
	var n ast.Node = k
	if mk, ok := k.(*ast.MappingKeyNode); ok { // explicit "? key"
		n = mk.Value
	}
	if !isScalar(n) {
		return "", false
	}
	if s, ok := n.(*ast.StringNode); ok {
		return s.Value, true
	}
	return n.GetToken().Value, true
}

func stringValue(r ast.Node, tag string) (string, bool) {
	switch x := r.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.LiteralNode:
		if x.Value != nil {
			return x.Value.Value, true
		}
	}
	if tag == "!!str" && isScalar(r) {
		return r.GetToken().Value, true
	}
	return "", false
}

func intValue(x *ast.IntegerNode) (int64, bool) {
	switch i := x.Value.(type) {
	case int64:
		return i, true
	case uint64:
		if i <= math.MaxInt64 {
			return int64(i), true
		}
	}
	return 0, false
}

// bigIntRE matches digits that goccy leaves as a string because they do not
// fit in 64 bits.
var bigIntRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

// isPlain reports whether x was written without quotes.
func isPlain(x *ast.StringNode) bool {
	tk := x.GetToken()
	return tk.Type != token.DoubleQuoteType && tk.Type != token.SingleQuoteType
}

func describe(n ast.Node) string {
	if isNil(n) {
		return "nothing"
	}
	switch x := n.(type) {
	case *ast.StringNode:
		return "string " + Echo(x.Value)
	case *ast.LiteralNode:
		return "a text block"
	case *ast.IntegerNode:
		return "integer " + Clip(x.GetToken().Value)
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + Clip(x.GetToken().Value)
	case *ast.BoolNode:
		return "boolean " + Clip(x.GetToken().Value)
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "nothing (null)"
	}
	return n.Type().String()
}

func isScalar(n ast.Node) bool {
	if isNil(n) {
		return false
	}
	switch n.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.InfinityNode, *ast.NanNode, *ast.NullNode:
		return n.GetToken() != nil
	}
	return false
}

func isNull(n ast.Node) bool {
	if isNil(n) {
		return true
	}
	_, ok := n.(*ast.NullNode)
	return ok
}

// isNil reports whether n is nil or a nil pointer in an interface.
func isNil(n ast.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
