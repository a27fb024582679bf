// Package strictyaml decodes one YAML document into Go structs strictly,
// reporting every problem at once at FILE:LINE:COL: an unknown key (with
// what is allowed and the nearest one), a wrong type, a bad value, a
// duplicate key. It reads goccy/go-yaml's syntax tree, so it knows where
// everything is, and it is safe on hostile input (size, nesting, aliases
// and merge keys are bounded). Types take part through small interfaces:
// Scalar, KeyedMap, Params and Allowed. Package scenario is its user.
package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Decoder fills a Go value from the YAML syntax tree, walking the tree
// alongside the value's type. It reports an unknown key, a wrong type or a
// bad scalar at its position and carries on, so one pass finds every such
// problem. It also remembers where each key and value is, for the checks in
// validate.go.
//
// Paths name places in the scenario the way messages do: "" is the top level,
// then "broker", "broker.kind", "variants[0]", "variants[0].expect.lost".
type Decoder struct {
	file    string
	anchors []*ast.AnchorNode
	keys    map[string]ast.Node // path → its key (for list items: the item)
	values  map[string]ast.Node // path → its value, when not null
	bad     map[string]bool     // paths already reported; later checks skip them
	errs    Errors
	depth   int
	work    int               // nodes visited, against aliases that expand without end
	open    map[ast.Node]bool // mappings being read, against merge keys that loop
	// overflow is the error reported when work reached maxWork: past it,
	// the values left unread would only add false problems.
	overflow *Error
}

// maxDepth bounds nesting, which the scenario types keep shallow; only an
// alias or merge key that refers to itself gets near it. maxWork bounds the
// nodes visited, which aliases could otherwise multiply ("billion laughs").
const (
	maxDepth = 32
	maxWork  = 100_000
)

// Scalar is a type that reads itself from one YAML scalar (a duration
// written "30s", a comparison written ">0"). UnmarshalYAMLScalar returns a
// *WrongType for a scalar of the wrong kind, or any other error for a bad
// value; either is reported at the value.
type Scalar interface {
	UnmarshalYAMLScalar(v ScalarValue) error
}

// ScalarValue is a YAML scalar as written.
type ScalarValue struct {
	Text     string
	IsString bool // a string (quoted or plain), not a number, bool or null
	IsInt    bool // an integer
}

// WrongType says what a Scalar must be: "must be WANT, got ...HINT".
type WrongType struct{ Want, Hint string }

func (w *WrongType) Error() string { return "must be " + w.Want }

// KeyedMap is a map value type whose maps take only the keys it lists (a
// map of expectations takes count names); a null value is an error.
type KeyedMap interface {
	// YAMLMapKeys lists the keys, says what the map must be (for "must be
	// X" messages) and what to write for a null value.
	YAMLMapKeys() (keys []string, want, nullHint string)
}

// Params is implemented by a struct with a `yaml:",params"` field: beside
// its own keys it takes the keys of a parameter struct that depends on one
// of its own values (a fault's type, a broker's kind). Its own keys are
// read first, then NewParams is asked for the parameter struct.
type Params interface {
	// NewParams returns a pointer to a fresh parameter struct, or nil when
	// there is none; known is false when the deciding value is unknown (its
	// own error is reported, and the other keys are not judged).
	NewParams() (params any, known bool)
	// ParamOwners names the other kinds that take key, for a hint.
	ParamOwners(key string) []string
	// KindName is the deciding value, e.g. the fault's type.
	KindName() string
}

// Allowed is a named string type with a closed set of values; a value
// outside it is reported with the set and a "did you mean".
type Allowed interface{ Allowed() []string }

var (
	scalarType   = reflect.TypeFor[Scalar]()
	keyedMapType = reflect.TypeFor[KeyedMap]()
)

// New prepares to decode root, the body of a document read from file.
func New(file string, root ast.Node) *Decoder {
	d := &Decoder{
		file:   file,
		keys:   map[string]ast.Node{},
		values: map[string]ast.Node{},
		bad:    map[string]bool{},
		open:   map[ast.Node]bool{},
	}
	for _, n := range ast.Filter(ast.AnchorType, root) {
		if a, ok := n.(*ast.AnchorNode); ok && !isNil(a.Name) && a.Start != nil {
			d.anchors = append(d.anchors, a)
		}
	}
	return d
}

// decode fills v from node n found at path.
func (d *Decoder) decode(path string, n ast.Node, v reflect.Value) {
	if !d.enter(path, n) {
		return
	}
	defer d.leave()
	r, tag, ok := d.resolve(path, n)
	if !ok || isNull(r) {
		return // null leaves the zero value: the key counts as unset
	}
	d.values[path] = n
	d.value(path, n, r, tag, v)
}

// value fills v from r, the resolved form of n (anchors, aliases and tags
// removed; tag is the removed tag, if any).
func (d *Decoder) value(path string, n, r ast.Node, tag string, v reflect.Value) {
	t := v.Type()
	if reflect.PointerTo(t).Implements(scalarType) {
		d.scalar(path, n, r, v)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(path, n, r, tag, v.Elem())
	case reflect.Struct:
		d.structure(path, n, r, v)
	case reflect.Slice:
		d.list(path, n, r, v)
	case reflect.Map:
		d.dict(path, n, r, v)
	case reflect.String:
		if s, ok := stringValue(r, tag); ok {
			if a, ok := v.Interface().(Allowed); ok {
				if allowed := a.Allowed(); IndexOf(allowed, s) < 0 {
					d.fail(path, n, fmt.Sprintf("%s: %s is not allowed (allowed: %s)%s", path, Echo(s), strings.Join(allowed, ", "), DidYouMean(s, allowed)))
					return
				}
			}
			v.SetString(s)
			return
		}
		hint := ""
		if isScalar(r) {
			hint = fmt.Sprintf(" (put it in quotes: %s)", Echo(r.GetToken().Value))
		}
		d.wrongType(path, n, r, "a string", hint)
	case reflect.Int, reflect.Int64:
		d.integer(path, n, r, v)
	case reflect.Float64:
		switch x := r.(type) {
		case *ast.FloatNode:
			v.SetFloat(x.Value)
		case *ast.InfinityNode, *ast.NanNode:
			d.wrongType(path, n, r, "a finite number", "")
		case *ast.IntegerNode:
			if i, ok := intValue(x); ok {
				v.SetFloat(float64(i))
				return
			}
			d.wrongType(path, n, r, "a number", "")
		default:
			d.wrongType(path, n, r, "a number", "")
		}
	case reflect.Bool:
		if b, ok := r.(*ast.BoolNode); ok {
			v.SetBool(b.Value)
			return
		}
		d.wrongType(path, n, r, "true or false", "")
	default:
		d.fail(path, n, fmt.Sprintf("%s: cannot be read (internal: unsupported type %s)", path, t))
	}
}

// structure fills struct v from a mapping whose keys are v's yaml tags. A
// field tagged `yaml:",params"` takes the keys of the parameter struct that
// v (a paramser) gives once its own keys are read.
func (d *Decoder) structure(path string, n, r ast.Node, v reflect.Value) {
	fields := Fields(v.Type())
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	params := paramsField(v.Type())
	pairs, ok := d.mapping(path, n, r, fmt.Sprintf("a mapping (keys: %s)", strings.Join(names, ", ")))
	if !ok {
		return
	}
	var rest []pair
	for _, p := range pairs {
		i := IndexOf(names, p.name)
		if i < 0 {
			rest = append(rest, p)
			continue
		}
		fp := Join(path, p.name)
		d.keys[fp] = p.key
		d.decode(fp, p.value, v.FieldByIndex(fields[i].Index))
	}

	// The parameter struct, now that the keys deciding it are read.
	var pv reflect.Value
	var pfields []Field
	var ps Params
	known := true
	if params != nil {
		ps = v.Addr().Interface().(Params)
		var p any
		if p, known = ps.NewParams(); p != nil {
			pv = reflect.ValueOf(p).Elem()
			pfields = Fields(pv.Type())
			v.FieldByIndex(params).Set(reflect.ValueOf(p))
		}
	}
	allowed := slices.Clone(names)
	for _, f := range pfields {
		allowed = append(allowed, f.Name)
	}
	var suggested []string
	for _, p := range rest {
		if i := slices.IndexFunc(pfields, func(f Field) bool { return f.Name == p.name }); i >= 0 {
			fp := Join(path, p.name)
			d.keys[fp] = p.key
			d.decode(fp, p.value, pv.FieldByIndex(pfields[i].Index))
			continue
		}
		if !known {
			continue // which keys are allowed depends on a value already reported
		}
		if ps != nil {
			if owners := ps.ParamOwners(p.name); len(owners) > 0 {
				d.errAt(p.key, fmt.Sprintf("%s: %s takes no %s (only %s does); remove it", Join(path, p.name), ps.KindName(), p.name, strings.Join(owners, ", ")))
				continue
			}
		}
		msg := fmt.Sprintf("unknown key %s %s (allowed: %s)", Echo(p.name), where(path), strings.Join(allowed, ", "))
		if s, ok := Suggest(p.name, allowed); ok {
			msg += fmt.Sprintf("; did you mean %q?", s)
			suggested = append(suggested, s)
		}
		d.errAt(p.key, msg)
	}
	for _, s := range suggested {
		if _, given := d.keys[Join(path, s)]; !given {
			d.bad[Join(path, s)] = true // "missing s" would only repeat the suggestion
		}
	}
}

// paramsField is the index of t's `yaml:",params"` field, or nil.
func paramsField(t reflect.Type) []int {
	for i := range t.NumField() {
		f := t.Field(i)
		if _, opts, _ := strings.Cut(f.Tag.Get("yaml"), ","); opts == "params" && f.IsExported() {
			return f.Index
		}
	}
	return nil
}

// ReflectType is the struct type p is or points to.
func ReflectType(p any) reflect.Type {
	t := reflect.TypeOf(p)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// dict fills a map with string keys; a map of a KeyedMap type only takes
// the keys it lists.
func (d *Decoder) dict(path string, n, r ast.Node, v reflect.Value) {
	t := v.Type()
	var allowed []string
	want, nullHint := "a mapping", ""
	if t.Elem().Implements(keyedMapType) {
		allowed, want, nullHint = reflect.Zero(t.Elem()).Interface().(KeyedMap).YAMLMapKeys()
	}
	pairs, ok := d.mapping(path, n, r, want)
	if !ok {
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	for _, p := range pairs {
		if allowed != nil && IndexOf(allowed, p.name) < 0 {
			d.errAt(p.key, fmt.Sprintf("unknown key %s %s (allowed: %s)%s",
				Echo(p.name), where(path), strings.Join(allowed, ", "), DidYouMean(p.name, allowed)))
			continue
		}
		kp := Join(path, p.name)
		d.keys[kp] = p.key
		if r, _, ok := d.resolve(kp, p.value); ok && isNull(r) && allowed != nil {
			d.fail(kp, p.key, fmt.Sprintf("%s: needs a value; %s", kp, nullHint))
			continue
		}
		e := reflect.New(t.Elem()).Elem()
		d.decode(kp, p.value, e)
		v.SetMapIndex(reflect.ValueOf(p.name).Convert(t.Key()), e)
	}
}

// list fills slice v from a sequence.
func (d *Decoder) list(path string, n, r ast.Node, v reflect.Value) {
	seq, ok := r.(*ast.SequenceNode)
	if !ok {
		d.wrongType(path, n, r, `a list (one "- " item per line)`, "")
		return
	}
	s := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		ip := fmt.Sprintf("%s[%d]", path, i)
		d.keys[ip] = item
		d.decode(ip, item, s.Index(i))
	}
	v.Set(s)
}

func (d *Decoder) integer(path string, n, r ast.Node, v reflect.Value) {
	switch x := r.(type) {
	case *ast.IntegerNode:
		if i, ok := intValue(x); ok && !v.OverflowInt(i) {
			v.SetInt(i)
			return
		}
		d.fail(path, n, fmt.Sprintf("%s: %s is too large", path, Clip(x.GetToken().Value)))
	case *ast.StringNode:
		if isPlain(x) && bigIntRE.MatchString(x.Value) {
			d.fail(path, n, fmt.Sprintf("%s: %s is too large", path, Clip(x.Value)))
			return
		}
		d.wrongType(path, n, r, "an integer", "")
	default:
		d.wrongType(path, n, r, "an integer", "")
	}
}

// scalar fills v, a Scalar, from a scalar node.
func (d *Decoder) scalar(path string, n, r ast.Node, v reflect.Value) {
	sv := ScalarValue{}
	switch x := r.(type) {
	case *ast.StringNode:
		sv.Text, sv.IsString = x.Value, true
	case *ast.IntegerNode:
		sv.Text, sv.IsInt = x.GetToken().Value, true
	default:
		if !isScalar(r) {
			sv.Text = ""
		} else {
			sv.Text = r.GetToken().Value
		}
	}
	err := v.Addr().Interface().(Scalar).UnmarshalYAMLScalar(sv)
	var wt *WrongType
	switch {
	case err == nil:
	case errors.As(err, &wt):
		d.wrongType(path, n, r, wt.Want, wt.Hint)
	default:
		d.fail(path, n, fmt.Sprintf("%s: %v", path, err))
	}
}

// pair is one key and value of a mapping.
type pair struct {
	name       string
	key, value ast.Node
}

// mapping returns the pairs of mapping r, with merge keys (<<) expanded
// first so that the mapping's own keys win.
func (d *Decoder) mapping(path string, n, r ast.Node, want string) ([]pair, bool) {
	var mvs []*ast.MappingValueNode
	switch x := r.(type) {
	case *ast.MappingNode:
		mvs = x.Values
	case *ast.MappingValueNode:
		mvs = []*ast.MappingValueNode{x}
	default:
		d.wrongType(path, n, r, want, "")
		return nil, false
	}
	d.open[r] = true
	defer delete(d.open, r)
	var merged, own []pair
	seen := map[string]ast.Node{} // key name → its first key, against duplicates
	for _, mv := range mvs {
		if mv == nil || isNil(mv.Key) {
			continue
		}
		if mv.Key.IsMergeKey() {
			merged = append(merged, d.merge(path, mv.Value, want)...)
			continue
		}
		name, ok := keyName(mv.Key)
		if !ok {
			d.errAt(mv.Key, fmt.Sprintf("%s: a key must be a plain name", orTop(path)))
			continue
		}
		if first, dup := seen[name]; dup {
			line, _, _ := nodePos(first)
			d.errAt(mv.Key, fmt.Sprintf("duplicate key %s %s (first on line %d); remove one of them", Echo(name), where(path), line))
			continue
		}
		seen[name] = mv.Key
		own = append(own, pair{name: name, key: mv.Key, value: mv.Value})
	}
	return append(merged, own...), true
}

// merge expands the value of a merge key: a mapping or a list of them.
func (d *Decoder) merge(path string, n ast.Node, want string) []pair {
	if !d.enter(path, n) {
		return nil
	}
	defer d.leave()
	r, _, ok := d.resolve(path, n)
	if !ok || isNull(r) {
		return nil
	}
	if d.open[r] {
		d.fail(path, n, fmt.Sprintf("%s: a merge key (<<) refers to the mapping it is in", orTop(path)))
		return nil
	}
	if seq, ok := r.(*ast.SequenceNode); ok {
		var out []pair
		for _, item := range seq.Values {
			out = append(out, d.merge(path, item, want)...)
		}
		return out
	}
	pairs, _ := d.mapping(path, n, r, want)
	return pairs
}

// enter counts a step into n, and reports false (having reported why) when
// the document nests or expands too far.
func (d *Decoder) enter(path string, n ast.Node) bool {
	d.work++
	switch {
	case d.work == maxWork:
		d.fail(path, n, fmt.Sprintf("too many values: more than %s, counting each use of an alias (*name) or merge key (<<) in full; do aliases expand to thousands of nodes?", Thousands(maxWork)))
		d.overflow = d.errs[len(d.errs)-1]
		return false
	case d.work > maxWork:
		return false
	case d.depth >= maxDepth:
		d.fail(path, n, "nested too deeply; does an alias or merge key (<<) refer to itself?")
		return false
	}
	d.depth++
	return true
}

func (d *Decoder) leave() { d.depth-- }

// resolve removes anchors and tags and follows aliases. It returns the
// innermost tag seen, and false (having reported it) for an unknown alias.
func (d *Decoder) resolve(path string, n ast.Node) (ast.Node, string, bool) {
	tag := ""
	for range maxDepth {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			if x.Start != nil {
				tag = x.Start.Value
			}
			n = x.Value
		case *ast.AliasNode:
			a := d.anchor(x)
			if a == nil {
				d.fail(path, n, fmt.Sprintf("%s: unknown alias %s; define the anchor (&name) before using it", orTop(path), Clip(x.String())))
				return nil, "", false
			}
			n = a.Value
		default:
			return n, tag, true
		}
		if isNil(n) {
			return nil, tag, true
		}
	}
	d.fail(path, n, fmt.Sprintf("%s: aliases refer to each other in a loop", orTop(path)))
	return nil, "", false
}

// anchor finds the anchor an alias refers to: the last one with its name
// defined before it.
func (d *Decoder) anchor(x *ast.AliasNode) *ast.AnchorNode {
	if isNil(x.Value) || x.Start == nil || x.Start.Position == nil {
		return nil
	}
	name := x.Value.GetToken().Value
	var found *ast.AnchorNode
	for _, a := range d.anchors {
		tk := a.Name.GetToken()
		if tk != nil && tk.Value == name && a.Start.Position != nil && a.Start.Position.Offset < x.Start.Position.Offset {
			found = a
		}
	}
	return found
}

// wrongType reports that the value at path is not what its field takes.
func (d *Decoder) wrongType(path string, n, r ast.Node, want, hint string) {
	if path == "" {
		d.fail(path, n, fmt.Sprintf("a scenario must be %s, got %s", want, describe(r)))
		return
	}
	d.fail(path, n, fmt.Sprintf("%s: must be %s, got %s%s", path, want, describe(r), hint))
}

// fail reports msg at node n and marks path as reported.
func (d *Decoder) fail(path string, n ast.Node, msg string) {
	d.bad[path] = true
	if line, col, ok := nodePos(n); ok {
		d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Msg: msg})
		return
	}
	d.errorAt(path, msg)
}

// errAt reports msg at node n.
func (d *Decoder) errAt(n ast.Node, msg string) {
	line, col, ok := nodePos(n)
	if !ok {
		line, col = 1, 1
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Msg: msg})
}

// errorAt reports msg at path's value, or its key, or the nearest enclosing
// place that has a position.
func (d *Decoder) errorAt(path, msg string) {
	line, col := d.pos(path)
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Msg: msg})
}

func (d *Decoder) pos(path string) (line, col int) {
	for {
		for _, n := range []ast.Node{d.values[path], d.keys[path]} {
			if line, col, ok := nodePos(n); ok {
				return line, col
			}
		}
		if path == "" {
			return 1, 1
		}
		path = Parent(path)
	}
}

// has reports whether path was given a non-null value.
func (d *Decoder) has(path string) bool {
	_, ok := d.values[path]
	return ok
}

// reported reports whether path or a place enclosing it has been reported.
func (d *Decoder) reported(path string) bool {
	for {
		if d.bad[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = Parent(path)
	}
}

// line is the line path starts on, or 0.
func (d *Decoder) line(path string) int {
	for _, n := range []ast.Node{d.values[path], d.keys[path]} {
		if line, _, ok := nodePos(n); ok {
			return line
		}
	}
	return 0
}

// Field is one yaml-tagged field of a struct.
type Field struct {
	Name  string
	Index []int
}

// Fields lists the yaml-tagged fields of struct type t, leaving out "-" and
// the `yaml:",params"` field. The fields of an embedded struct tagged
// `yaml:",inline"` are listed in its place, as if they were t's own.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || opts == "params" {
			continue
		}
		if opts == "inline" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			for _, in := range Fields(f.Type) {
				out = append(out, Field{Name: in.Name, Index: append([]int{i}, in.Index...)})
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, Field{Name: name, Index: f.Index})
	}
	return out
}

// Decode fills v (a pointer) from the document.
func (d *Decoder) Decode(root ast.Node, v any) {
	d.decode("", root, reflect.ValueOf(v).Elem())
}

// Has reports whether path was given a non-null value.
func (d *Decoder) Has(path string) bool { return d.has(path) }

// HasKey reports whether path was written, even with a null value.
func (d *Decoder) HasKey(path string) bool {
	_, ok := d.keys[path]
	return ok
}

// Reported reports whether path or a place enclosing it has a problem.
func (d *Decoder) Reported(path string) bool { return d.reported(path) }

// ErrorAt reports msg at path's value, or its key, or the nearest
// enclosing place that has a position.
func (d *Decoder) ErrorAt(path, msg string) { d.errorAt(path, msg) }

// Line is the line path starts on, or 0.
func (d *Decoder) Line(path string) int { return d.line(path) }

// Add adds problems found outside the decoder (by the document reader).
func (d *Decoder) Add(problems Errors) { d.errs = append(d.errs, problems...) }

// Overflow is the one problem to report when the document was too large to
// read whole (its other problems would be false), or nil.
func (d *Decoder) Overflow() *Error { return d.overflow }

// Problems is every problem found, in file order.
func (d *Decoder) Problems() Errors { return d.errs.Sorted() }

// Pos is where path is in the file (line and column, 1-based; 0, 0 when
// it is not there).
func (d *Decoder) Pos(path string) (line, col int) { return d.pos(path) }
