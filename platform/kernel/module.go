package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
)

const moduleFile = "cue.mod/module.cue"

// checkModuleFile reads the module file of the module at the root of fsys,
// shown in errors as name, refuses a module that declares dependencies and
// returns the module path. The kernel loads no registry, so each platform
// and instance module must stand alone. The loader validates the rest of
// the file.
func checkModuleFile(fsys fs.FS, name string) (string, error) {
	data, err := fs.ReadFile(fsys, moduleFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("not a CUE module: %s is missing", name)
	}
	if err != nil {
		return "", err
	}
	f, err := parser.ParseFile(name, data)
	if err != nil {
		return "", err
	}
	module := ""
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		switch label, _, _ := ast.LabelName(fd.Label); label {
		case "deps":
			return "", cueerrors.Newf(fd.Pos(), "the module declares dependencies; platform and instance modules must be self-contained, and the kernel uses no registry")
		case "module":
			if lit, ok := fd.Value.(*ast.BasicLit); ok {
				module, _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return module, nil
}
