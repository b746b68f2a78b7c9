package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Import statements resolve to the repository's files, per language: the
// explicit imports in statement order, then the implicit ones (same Go or
// Java package, the matching C/C++ header or source) by path. A language's
// module resolution is added here with its cases.
func TestResolveImports(t *testing.T) {
	g := syntax.NewGrammars(1)
	defer g.Close()
	for _, tc := range []struct {
		name   string
		files  map[string]string
		cursor string
		want   []string // explicit first, then "+path" for implicit ones
	}{
		{"python absolute and from", map[string]string{
			"app/main.py":             "import pkg.util\nfrom pkg import models, helpers\nimport os\n",
			"pkg/__init__.py":         "",
			"pkg/util.py":             "def u(): pass\n",
			"pkg/models.py":           "class M: pass\n",
			"pkg/helpers/__init__.py": "def h(): pass\n",
		}, "app/main.py", []string{"pkg/util.py", "pkg/__init__.py", "pkg/models.py", "pkg/helpers/__init__.py"}},
		{"python relative", map[string]string{
			"pkg/sub/a.py":        "from . import b\nfrom ..top import T\nfrom .c import x\n",
			"pkg/sub/b.py":        "B = 1\n",
			"pkg/sub/c.py":        "x = 1\n",
			"pkg/sub/__init__.py": "",
			"pkg/top.py":          "class T: pass\n",
		}, "pkg/sub/a.py", []string{"pkg/sub/__init__.py", "pkg/sub/b.py", "pkg/top.py", "pkg/sub/c.py"}},
		{"python src layout, namespace package, tests beside", map[string]string{
			"pyproject.toml":                 "[project]\nname = \"acme\"\n",
			"src/acme/__init__.py":           "",
			"src/acme/core/__init__.py":      "from .engine import Engine\n",
			"src/acme/core/engine.py":        "from ..util import helpers\nfrom . import state\nfrom acme.plugins.csv import reader\n",
			"src/acme/core/state.py":         "S = 1\n",
			"src/acme/util/helpers.py":       "def h(): pass\n",
			"src/acme/plugins/csv/reader.py": "def read(): pass\n",
			"tests/test_engine.py":           "import acme.core.engine\nfrom acme.core import Engine\nimport json\n",
			"tools/json.py":                  "x = 1\n",
		}, "src/acme/core/engine.py", []string{"src/acme/util/helpers.py", "src/acme/core/__init__.py", "src/acme/core/state.py", "src/acme/plugins/csv/reader.py"}},
		{"python test file imports the package under src", map[string]string{
			"src/acme/__init__.py":      "",
			"src/acme/core/__init__.py": "from .engine import Engine\n",
			"src/acme/core/engine.py":   "class Engine: pass\n",
			"tests/test_engine.py":      "import acme.core.engine\nfrom acme.core import Engine\nimport json\n",
			"tools/json.py":             "x = 1\n",
		}, "tests/test_engine.py", []string{"src/acme/core/engine.py", "src/acme/core/__init__.py"}},
		{"go nested module and replace within the repository", map[string]string{
			"go.mod":                         "module example.com/app\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ./third_party/lib\n",
			"main.go":                        "package main\n\nimport (\n\t\"example.com/app/internal/db\"\n\t\"example.com/lib/codec\"\n\t\"example.com/app/tools/gen\"\n)\n",
			"internal/db/db.go":              "package db\n",
			"third_party/lib/go.mod":         "module github.com/vendor/lib\n",
			"third_party/lib/codec/codec.go": "package codec\n",
			"tools/go.mod":                   "module example.com/app/tools\n",
			"tools/gen/gen.go":               "package gen\n",
		}, "main.go", []string{"internal/db/db.go", "third_party/lib/codec/codec.go", "tools/gen/gen.go"}},
		{"go module path and package", map[string]string{
			"go.mod":        "module example.com/m\n\ngo 1.22\n",
			"cmd/main.go":   "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/m/lib\"\n)\n\nfunc main() { fmt.Println(lib.X) }\n",
			"cmd/other.go":  "package main\n",
			"cmd/x_test.go": "package main\n",
			"lib/a.go":      "package lib\n\nvar X = 1\n",
			"lib/b.go":      "package lib\n",
			"lib/a_test.go": "package lib\n",
		}, "cmd/main.go", []string{"lib/a.go", "lib/b.go", "+cmd/other.go"}},
		{"go without go.mod: directory suffix", map[string]string{
			"src/net/http/client.go": "package http\n\nimport \"net/url\"\n",
			"src/net/url/url.go":     "package url\n",
		}, "src/net/http/client.go", []string{"src/net/url/url.go"}},
		{"typescript relative, .js for .ts, index", map[string]string{
			"src/app.ts":   "import { a } from './a.js';\nimport b from '../lib';\nimport React from 'react';\nconst c = require('./c');\n",
			"src/a.ts":     "export const a = 1;\n",
			"src/c.js":     "module.exports = 1;\n",
			"lib/index.ts": "export default 1;\n",
		}, "src/app.ts", []string{"src/a.ts", "lib/index.ts", "src/c.js"}},
		{"typescript monorepo: workspace packages, tsconfig paths through extends, re-exports", map[string]string{
			"package.json": `{"name": "root", "private": true, "workspaces": ["packages/*"]}`,
			"tsconfig.base.json": `{
  // shared options
  "compilerOptions": {
    "baseUrl": ".",
    "paths": {
      "~/*": ["packages/app/src/*"], /* app-local alias */
      "@shared": ["packages/core/src/shared.ts",],
    },
  },
}`,
			"packages/app/tsconfig.json":       `{"extends": "../../tsconfig.base.json", "compilerOptions": {"outDir": "dist"}}`,
			"packages/app/package.json":        `{"name": "@acme/app", "dependencies": {"@acme/core": "workspace:*"}}`,
			"packages/app/src/main.ts":         "import { makeUser, Role } from '@acme/core';\nimport { fmt } from '@acme/core/util/format';\nimport { cfg } from '~/config';\nimport { S } from '@shared';\nimport { b } from '@acme/ui/button';\nimport lodash from 'lodash';\n",
			"packages/app/src/config.ts":       "export const cfg = 1;\n",
			"packages/core/package.json":       `{"name": "@acme/core", "main": "./dist/index.js", "types": "./dist/index.d.ts"}`,
			"packages/core/src/index.ts":       "export * from './user.js';\nexport { Role } from './roles';\nexport { other } from './other';\n",
			"packages/core/src/user.ts":        "export function makeUser() {}\n",
			"packages/core/src/roles.ts":       "export enum Role { A }\n",
			"packages/core/src/other.ts":       "export const other = 1;\n",
			"packages/core/src/util/format.ts": "export function fmt() {}\n",
			"packages/core/src/shared.ts":      "export const S = 1;\n",
			"packages/ui/package.json":         `{"name": "@acme/ui", "exports": {".": "./src/index.ts", "./*": {"types": "./dist/*.d.ts", "import": "./dist/*.mjs"}}}`,
			"packages/ui/src/button.tsx":       "export const b = 1;\n",
		}, "packages/app/src/main.ts", []string{"packages/core/src/index.ts", "packages/core/src/user.ts", "packages/core/src/roles.ts",
			"packages/core/src/util/format.ts", "packages/app/src/config.ts", "packages/core/src/shared.ts", "packages/ui/src/button.tsx"}},
		{"javascript jsconfig baseUrl, directory package, cycle-safe re-exports", map[string]string{
			"jsconfig.json":            `{"compilerOptions": {"baseUrl": "src"}}`,
			"src/app.js":               "import { a, z } from 'lib';\nimport { w } from 'widgets';\n",
			"src/lib/index.js":         "export * from './a.mjs';\nexport * from './index.js';\n",
			"src/lib/a.mjs":            "export * from './index.js';\nexport function a() {}\n",
			"src/widgets/package.json": `{"main": "w.cjs"}`,
			"src/widgets/w.cjs":        "exports.w = 1;\n",
		}, "src/app.js", []string{"src/lib/index.js", "src/lib/a.mjs", "src/widgets/w.cjs"}},
		{"typescript component barrel with renamed and default re-exports", map[string]string{
			"src/components/index.ts":   "export { default as Button } from './Button';\nexport { Card as Panel } from './Card';\nexport * from './icons';\n",
			"src/components/Button.tsx": "export default function Button() { return null; }\n",
			"src/components/Card.tsx":   "export interface CardProps { title: string }\nexport function Card(p: CardProps) { return null; }\n",
			"src/components/icons.tsx":  "export const Icon = 1;\n",
			"src/pages/Home.tsx":        "import { Button, Panel } from '../components';\n",
		}, "src/pages/Home.tsx", []string{"src/components/index.ts", "src/components/Button.tsx", "src/components/Card.tsx"}},
		{"typescript vite app: aliases in tsconfig.app.json beside a solution tsconfig.json", map[string]string{
			"tsconfig.json":                `{"files": [], "references": [{"path": "./tsconfig.app.json"}, {"path": "./tsconfig.node.json"}]}`,
			"tsconfig.app.json":            "{\n  \"compilerOptions\": {\n    /* Bundler mode */\n    \"paths\": { \"@/*\": [\"./src/*\"] },\n  },\n  \"include\": [\"src\"]\n}\n",
			"tsconfig.node.json":           `{"compilerOptions": {"module": "ESNext"}, "include": ["vite.config.ts"]}`,
			"src/App.tsx":                  "import { Button } from '@/components/ui/button';\nimport { cn } from '@/lib/utils';\n",
			"src/components/ui/button.tsx": "export function Button() { return null; }\n",
			"src/lib/utils.ts":             "export function cn() {}\n",
		}, "src/App.tsx", []string{"src/components/ui/button.tsx", "src/lib/utils.ts"}},
		{"java class, wildcard, static, package", map[string]string{
			"src/com/x/App.java":    "package com.x;\n\nimport com.y.Util;\nimport com.z.*;\nimport static com.y.Consts.MAX;\n\nclass App {}\n",
			"src/com/x/Peer.java":   "package com.x;\nclass Peer {}\n",
			"src/com/y/Util.java":   "package com.y;\npublic class Util {}\n",
			"src/com/y/Consts.java": "package com.y;\npublic class Consts { public static int MAX = 1; }\n",
			"src/com/z/One.java":    "package com.z;\npublic class One {}\n",
			"src/com/z/Two.java":    "package com.z;\npublic class Two {}\n",
		}, "src/com/x/App.java", []string{"src/com/y/Util.java", "src/com/z/One.java", "src/com/z/Two.java", "src/com/y/Consts.java", "+src/com/x/Peer.java"}},
		{"rust crate, super and mod", map[string]string{
			"src/lib.rs":     "mod net;\nmod util;\n",
			"src/net/mod.rs": "mod tcp;\nuse crate::util::{helper, Thing};\nuse super::util;\n",
			"src/net/tcp.rs": "pub fn connect() {}\n",
			"src/util.rs":    "pub fn helper() {}\n",
		}, "src/net/mod.rs", []string{"src/net/tcp.rs", "src/util.rs"}},
		{"rust workspace members and 2018 modules", map[string]string{
			"Cargo.toml":                   "[workspace]\nmembers = [\"crates/*\"]\n",
			"crates/core-types/Cargo.toml": "[package]\nname = \"core-types\"\nversion = \"0.1.0\"\n",
			"crates/core-types/src/lib.rs": "pub mod id;\n",
			"crates/core-types/src/id.rs":  "pub struct Id;\n",
			"crates/server/Cargo.toml":     "[package]\nname = \"server\"\n\n[lib]\npath = \"src/lib.rs\"\n",
			"crates/server/src/main.rs":    "mod net;\nuse core_types::id::Id;\nuse core_types::Thing;\nuse serde::Serialize;\n",
			"crates/server/src/net.rs":     "mod tcp;\n",
			"crates/server/src/net/tcp.rs": "pub fn c() {}\n",
		}, "crates/server/src/main.rs", []string{"crates/server/src/net.rs", "crates/core-types/src/id.rs", "crates/core-types/src/lib.rs"}},
		{"c and c++ include directories", map[string]string{
			"include/acme/api.h":     "int api(void);\n",
			"src/core/api.c":         "#include \"acme/api.h\"\n#include \"../common/log.h\"\n#include \"internal.h\"\n#include <string.h>\n",
			"src/common/log.h":       "void log(void);\n",
			"src/core/internal/x.h":  "",
			"src/private/internal.h": "int i;\n",
			"third_party/string.h":   "",
		}, "src/core/api.c", []string{"include/acme/api.h", "src/common/log.h", "src/private/internal.h"}},
		{"java maven modules", map[string]string{
			"core/src/main/java/org/acme/core/Engine.java":     "package org.acme.core;\n\nimport org.acme.api.Plugin;\nimport org.acme.api.spi.*;\nimport java.util.List;\n\nclass Engine {}\n",
			"api/src/main/java/org/acme/api/Plugin.java":       "package org.acme.api;\npublic interface Plugin {}\n",
			"api/src/main/java/org/acme/api/spi/Hook.java":     "package org.acme.api.spi;\npublic interface Hook {}\n",
			"core/src/test/java/org/acme/core/EngineTest.java": "package org.acme.core;\nclass EngineTest {}\n",
			"core/src/main/java/org/acme/core/State.java":      "package org.acme.core;\nclass State {}\n",
		}, "core/src/main/java/org/acme/core/Engine.java", []string{"api/src/main/java/org/acme/api/Plugin.java", "api/src/main/java/org/acme/api/spi/Hook.java", "+core/src/main/java/org/acme/core/State.java"}},
		{"java test sees its package's main sources", map[string]string{
			"core/src/main/java/org/acme/core/Engine.java":     "package org.acme.core;\nclass Engine {}\n",
			"core/src/main/java/org/acme/core/State.java":      "package org.acme.core;\nclass State {}\n",
			"core/src/test/java/org/acme/core/EngineTest.java": "package org.acme.core;\n\nimport org.junit.jupiter.api.Test;\n\nclass EngineTest {}\n",
			"core/src/test/java/org/acme/core/Fixtures.java":   "package org.acme.core;\nclass Fixtures {}\n",
		}, "core/src/test/java/org/acme/core/EngineTest.java", []string{"+core/src/main/java/org/acme/core/Engine.java", "+core/src/main/java/org/acme/core/State.java", "+core/src/test/java/org/acme/core/Fixtures.java"}},
		{"c quote, system, matching header", map[string]string{
			"src/main.c":        "#include \"util.h\"\n#include <lib/api.h>\n#include <stdio.h>\n",
			"src/main.h":        "int main(void);\n",
			"src/util.h":        "int util(void);\n",
			"include/lib/api.h": "int api(void);\n",
		}, "src/main.c", []string{"src/util.h", "include/lib/api.h", "+src/main.h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newIndex()
			var files []RequestFile
			paths := make([]string, 0, len(tc.files))
			for p := range tc.files {
				paths = append(paths, p)
			}
			slices.Sort(paths)
			for _, p := range paths {
				lang := syntax.DetectLang(p, "")
				a, err := syntax.Analyze(context.Background(), g, tc.files[p], lang,
					syntax.Options{MaxParseBytes: 1 << 20, ParseTimeoutUS: 1e6, WindowLines: 20, WindowStride: 10})
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, RequestFile{Path: p, Lang: lang, Indexed: &Content{Text: tc.files[p]}, Analysis: a})
			}
			x.Update(files, true)
			var got []string
			for _, h := range x.View().ResolveImports(x.File(tc.cursor)) {
				p := h.File.Path
				if !h.Explicit {
					p = "+" + p
				}
				got = append(got, p)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("resolved %s\n want %s", fmt.Sprint(got), strings.Join(tc.want, " "))
			}
		})
	}
}
