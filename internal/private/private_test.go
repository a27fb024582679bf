package private

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// asOwner makes the files for which foreign reports true belong to uid
// 4242, for the test.
func asOwner(t *testing.T, foreign func(path string) bool) {
	t.Helper()
	saved := Owner
	t.Cleanup(func() { Owner = saved })
	Owner = func(path string, fi fs.FileInfo) (int, bool) {
		if foreign(path) {
			return 4242, true
		}
		return saved(path, fi)
	}
}

func TestDir(t *testing.T) {
	base := t.TempDir()
	mineDir := filepath.Join(base, "mine")
	if err := MkdirAll(mineDir); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	if fi, _ := os.Stat(mineDir); fi.Mode().Perm() != 0o700 {
		t.Errorf("made with mode %04o, want 0700", fi.Mode().Perm())
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	os.Symlink(mineDir, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	foreign := filepath.Join(base, "foreign")
	os.Mkdir(foreign, 0o700)
	below := filepath.Join(foreign, "below")
	os.Mkdir(below, 0o700)
	asOwner(t, func(p string) bool { return p == foreign })

	for dir, want := range map[string]string{
		mineDir: "",
		open:    "it is writable by group or others (mode 0777)",
		link:    "it is a symbolic link",
		file:    "it is not a directory",
		foreign: "it belongs to uid 4242, not to you",
		below:   foreign + " above it belongs to uid 4242",
	} {
		err := Dir(dir)
		switch {
		case want == "" && err != nil:
			t.Errorf("Dir(%s): %v", dir, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrNotPrivate)):
			t.Errorf("Dir(%s) = %v, want an error saying %q", dir, err, want)
		}
	}
	if err := Dir(foreign, 4242); err != nil {
		t.Errorf("Dir(foreign, its owner also allowed): %v", err)
	}
	if err := MkdirAll(open); err == nil {
		t.Error("MkdirAll took a directory others can write to")
	}
	if err := File(file); err != nil {
		t.Errorf("File(mine): %v", err)
	}
	if err := File(link); err == nil {
		t.Error("File took a symbolic link")
	}
}
