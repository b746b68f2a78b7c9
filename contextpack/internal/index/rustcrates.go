package index

import (
	"strings"
)

// rustCrates maps the names of the repository's library crates (as a
// path names them: "core-types" is core_types) to their root files' paths,
// derived from the Cargo.toml files when one of them changes (at the next
// resolution), not per request.
func (r *Index) rustCrates() map[string]string {
	if r.crateRoots != nil {
		return r.crateRoots
	}
	m := map[string]string{}
	for _, sl := range r.byBase["Cargo.toml"] {
		name, lib := parseCargoManifest(sl.Text().Text)
		if name == "" {
			continue
		}
		if lib == "" {
			lib = "src/lib.rs"
		}
		m[strings.ReplaceAll(name, "-", "_")] = joinDir(sl.Dir, lib)
	}
	r.crateRoots = m
	return m
}

// parseCargoManifest reads [package] name and [lib] path (and [lib]
// name, which overrides the crate's name) from a Cargo.toml.
func parseCargoManifest(toml string) (name, lib string) {
	section, libName := "", ""
	for _, ln := range strings.Split(toml, "\n") {
		ln = strings.TrimSpace(ln)
		if strings.HasPrefix(ln, "[") {
			section = strings.Trim(ln, "[] ")
			continue
		}
		k, v, ok := strings.Cut(ln, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if i := strings.Index(v, "#"); i >= 0 && strings.Count(v[:i], `"`)%2 == 0 {
			v = strings.TrimSpace(v[:i])
		}
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			continue
		}
		v = v[1 : len(v)-1]
		switch {
		case section == "package" && k == "name":
			name = v
		case section == "lib" && k == "path":
			lib = v
		case section == "lib" && k == "name":
			libName = v
		}
	}
	if libName != "" && name != "" {
		name = libName
	}
	return name, lib
}
