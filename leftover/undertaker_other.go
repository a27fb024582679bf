//go:build !unix

package leftover

// UndertakerArg is the hidden command a dqbench runs as its undertaker.
const UndertakerArg = "__undertaker"

// StartUndertaker does nothing where there are no process groups: what a
// killed run leaves is removed by the next run or "dqbench clean".
func StartUndertaker(self, argv0 string) (stop func(), err error) { return func() {}, nil }

// Undertake: no undertaker here.
func Undertake() string { return "" }
