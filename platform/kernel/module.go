package kernel

import (
	"errors"
	"fmt"
	"io/fs"

	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/mod/modfile"
)

const moduleFile = "cue.mod/module.cue"

// checkModuleFile reads and validates the module file of the module at the
// root of fsys, shown in errors as name, and returns the module path. A
// module that declares dependencies is refused: the kernel loads no
// registry, so each platform and instance module must stand alone.
func checkModuleFile(fsys fs.FS, name string) (string, error) {
	data, err := fs.ReadFile(fsys, moduleFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("not a CUE module: %s is missing", name)
	}
	if err != nil {
		return "", err
	}
	mf, err := modfile.Parse(data, name)
	if err != nil {
		return "", err
	}
	if len(mf.Deps) > 0 {
		pos := modulePos(data, name, "deps").Pos()
		return "", cueerrors.Newf(pos, "the module declares dependencies (%d); platform and instance modules must be self-contained, and the kernel uses no registry", len(mf.Deps))
	}
	return mf.Module, nil
}

// modulePos returns the position of the top-level field label in the
// module file, for errors.
func modulePos(data []byte, name, label string) ast.Node {
	f, err := parser.ParseFile(name, data)
	if err != nil {
		return &ast.File{}
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.Field); ok {
			if l, _, _ := ast.LabelName(fd.Label); l == label {
				return fd
			}
		}
	}
	return f
}
