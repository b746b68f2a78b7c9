package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/infill-dev/infill/contextpack"
)

// TestImportClasses reads each file's imports and classes them against a
// small repository of every language.
func TestImportClasses(t *testing.T) {
	files := []contextpack.File{
		{Path: "go.mod", Content: "module example.com/shop\n"},
		{Path: "cart/cart.go", Content: "package cart\n\nimport (\n\t\"fmt\"\n\tp \"example.com/shop/price\"\n)\n"},
		{Path: "price/price.go", Content: "package price\n"},
		{Path: "src/shop/__init__.py", Content: ""},
		{Path: "src/shop/report.py", Content: "import os, shop.totals as t\nfrom . import totals\nfrom shop.totals import daily\n"},
		{Path: "src/shop/totals.py", Content: ""},
		{Path: "packages/web/package.json", Content: `{"name": "@shop/web"}`},
		{Path: "tsconfig.json", Content: "{\n  // aliases\n  \"compilerOptions\": {\"paths\": {\"~/*\": [\"src/*\"], \"lexical\": [\"x\"],},},\n}\n"},
		{Path: "packages/web/src/a.ts", Content: "import { b } from './b.js';\nimport React from 'react';\n" +
			"export * from '@shop/web/src/c';\nimport x from '~/util';\nimport { $y } from 'lexical';\nconst z = require('../z');\n"},
		{Path: "src/main/java/org/shop/Cart.java", Content: "package org.shop;\nimport java.util.List;\n" +
			"import org.shop.price.Item;\nimport static org.shop.price.Money.*;\n"},
		{Path: "src/main/java/org/shop/price/Item.java", Content: "package org.shop.price;\n"},
		{Path: "Cargo.toml", Content: "[package]\nname = \"shop-core\"\n"},
		{Path: "src/lib.rs", Content: "mod cart;\nmod inline { }\nuse std::fmt;\nuse crate::cart::Cart;\nuse shop_core::price;\n"},
		{Path: "include/shop/db.h", Content: ""},
		{Path: "src/db.c", Content: "#include <stdio.h>\n#include <shop/db.h>\n#include \"table.h\"\n"},
	}
	r := newRepository(repoSpec{name: "t"}, 0, files)
	ri := newRepoImports(r)
	want := map[string]string{
		"cart/cart.go":          "fmt:external example.com/shop/price:own",
		"src/shop/report.py":    "os:external shop.totals:own .:relative shop.totals:own",
		"packages/web/src/a.ts": "./b.js:relative react:external @shop/web/src/c:own ~/util:own lexical:own ../z:relative",
		"src/main/java/org/shop/Cart.java": "java.util.List:external org.shop.price.Item:own " +
			"static org.shop.price.Money.*:own",
		"src/lib.rs": "mod cart:relative std::fmt:external crate::cart::Cart:relative shop_core::price:own",
		"src/db.c":   "<stdio.h>:external <shop/db.h>:own \"table.h\":relative",
	}
	names := []string{"external", "relative", "own"}
	for path, w := range want {
		l := langOf(path, false)
		var got []string
		for _, spec := range fileImports(files[r.byPath[path]].Content, l) {
			got = append(got, fmt.Sprintf("%s:%s", spec, names[ri.classify(l, spec)]))
		}
		if g := strings.Join(got, " "); g != w {
			t.Errorf("%s:\n got %s\nwant %s", path, g, w)
		}
	}
}
