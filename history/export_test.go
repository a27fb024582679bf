package history

// TypedFromText is typedFromText, for the decoder's fuzz test: Read gives
// what encoding/json reads, with the typed fields an older build's text
// says set.
var TypedFromText = typedFromText
