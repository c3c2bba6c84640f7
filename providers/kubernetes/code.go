package kubernetes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/trialform/trialform/providers/codedir"
)

type codeFile struct {
	rel  string // slash-separated
	mode fs.FileMode
	data []byte
}

// scanCode reads the regular files of the code dir as every platform ships
// it (providers/codedir: .trialformignore and .nniignore, never .git,
// .trialform or __pycache__, at most 2000 files and 300 MB).
func scanCode(dir string) ([]codeFile, error) {
	code, err := codedir.Scan(dir)
	if err != nil {
		return nil, err
	}
	var files []codeFile
	for _, f := range code.Files {
		if !f.Mode.IsRegular() {
			continue
		}
		b, err := os.ReadFile(code.Path(f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // vanished since the scan
		}
		if err != nil {
			return nil, fmt.Errorf("read code dir: %w", err)
		}
		files = append(files, codeFile{rel: f.Rel, mode: f.Mode, data: b})
	}
	return files, nil
}
