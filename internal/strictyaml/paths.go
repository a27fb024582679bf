package strictyaml

// Paths name places in a scenario the way messages do: "" is the top level,
// then "broker", "broker.kind", "variants[0]", "variants[0].expect.lost".

import "strings"

func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// parent is the path enclosing path: "variants[0].name" → "variants[0]" →
// "variants" → "".
func Parent(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func IndexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
