package plugins

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/svctrace/svctrace/"

// TestPlanesStayInPlugins keeps the import boundary the architecture rests
// on (as Kubernetes' .import-restrictions do): code outside plugins/, tests
// included, knows a data plane only through dataplane's contract and this
// package's registry, so that adding a plane touches its own package and
// one line of Loaders.
func TestPlanesStayInPlugins(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	planes := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			planes[module+"plugins/"+e.Name()] = true
		}
	}
	if len(planes) < 2 {
		t.Fatalf("found planes %v: the test cannot see plugins/", planes)
	}
	checked := 0
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if d.IsDir() {
			if rel != "." && (rel == "plugins" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if planes[p] {
				t.Errorf("%s imports the data plane %s: outside plugins/, use dataplane's contract", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files outside plugins/", checked)
	}
}
