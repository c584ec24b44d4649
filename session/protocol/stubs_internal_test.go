package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestImportedModules(t *testing.T) {
	code := `import tools, json
import a.b.c as d  # comment
from web.fetch import get
from . import sibling
from typing import Any
  import indented; import ignored
x = "import notamodule"
import tools
from os import path`
	assert.Equal(t, []string{"tools", "a", "web", "indented"}, importedModules(code))
	assert.Empty(t, importedModules("print('hi')\n"))
}
