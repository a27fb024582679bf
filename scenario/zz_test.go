package scenario
import ("testing";"path/filepath";"fmt")
func TestZZ(t *testing.T){
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, f := range files {
		_, err := Load(f)
		fmt.Printf("== %s\n%v\n", f, err)
	}
}
