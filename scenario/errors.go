package scenario

import "github.com/dqbench/dqbench/internal/strictyaml"

// Error is one problem in a scenario file, at FILE:LINE:COL.
type Error = strictyaml.Error

// Errors is every problem found in one scenario file, in file order.
type Errors = strictyaml.Errors

// Bounds on a scenario file, checked before the YAML parser sees it.
const (
	MaxFileSize = strictyaml.MaxFileSize
	MaxNesting  = strictyaml.MaxNesting
)

// Helpers of the strict decoder that messages here use too.
var (
	echo       = strictyaml.Echo
	didYouMean = strictyaml.DidYouMean
	join       = strictyaml.Join
	parent     = strictyaml.Parent
	indexOf    = strictyaml.IndexOf
)
