//go:build linux

package lab

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// cpioFile is one entry of an initramfs: a file's content or a symlink's
// target, at its path inside the archive.
type cpioFile struct {
	data  []byte
	link  string
	mode  os.FileMode
	isDir bool
}

// writeCPIO writes files as the kernel's initramfs format (cpio "newc"),
// directories first so that each exists before what it holds.
func writeCPIO(w io.Writer, files map[string]cpioFile) error {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	ino := 1
	for _, name := range names {
		f := files[name]
		mode := uint32(f.mode.Perm())
		var body []byte
		switch {
		case f.isDir:
			mode |= 0o040000
		case f.link != "":
			mode |= 0o120000
			body = []byte(f.link)
		default:
			mode |= 0o100000
			body = f.data
		}
		if err := cpioEntry(w, name, ino, mode, body); err != nil {
			return err
		}
		ino++
	}
	return cpioEntry(w, "TRAILER!!!", 0, 0, nil)
}

func cpioEntry(w io.Writer, name string, ino int, mode uint32, body []byte) error {
	nlink := 1
	if mode&0o170000 == 0o040000 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(body), 0, 0, 0, 0, len(name)+1, 0)
	pad := func(n int) []byte { return make([]byte, (4-n%4)%4) }
	for _, b := range [][]byte{[]byte(hdr), []byte(name), {0}, pad(len(hdr) + len(name) + 1), body, pad(len(body))} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// addDirs adds path and every directory above it to files.
func addDirs(files map[string]cpioFile, path string) {
	for d := path; d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
		files[d] = cpioFile{isDir: true, mode: 0o755}
	}
}
