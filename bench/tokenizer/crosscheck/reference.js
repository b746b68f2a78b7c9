// Encodes every UTF-8 file under DIR (with one of the given extensions) with
// Hugging Face tokenizers and writes one JSON line per file:
// {"path", "count", "sha256", "special_count", "special_sha256"}.
// Usage: node reference.js TOKENIZER_JSON DIR OUT.jsonl EXT...
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { Tokenizer } = require('@anush008/tokenizers');

const [tokPath, dir, outFile, ...exts] = process.argv.slice(2);
const tokJSON = JSON.parse(fs.readFileSync(tokPath, 'utf8'));
const withSpecial = Tokenizer.fromString(JSON.stringify(tokJSON));
const plain = Tokenizer.fromString(JSON.stringify({ ...tokJSON, added_tokens: [] }));
const sha = (ids) => crypto.createHash('sha256').update(ids.join(',')).digest('hex');

function* walk(d) {
  for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (e.isFile() && (exts.length === 0 || exts.some((x) => e.name.endsWith(x)))) yield p;
  }
}

(async () => {
  const out = fs.openSync(outFile, 'w');
  let files = 0;
  for (const p of walk(dir)) {
    const buf = fs.readFileSync(p);
    if (buf.length > 1 << 20) continue;
    const text = buf.toString('utf8');
    if (!Buffer.from(text, 'utf8').equals(buf)) continue; // not valid UTF-8
    const a = (await plain.encode(text, null, { addSpecialTokens: false })).getIds();
    const b = (await withSpecial.encode(text, null, { addSpecialTokens: false })).getIds();
    fs.writeSync(out, JSON.stringify({ path: path.relative(dir, p), count: a.length, sha256: sha(a), special_count: b.length, special_sha256: sha(b) }) + '\n');
    files++;
  }
  fs.closeSync(out);
  console.error(`reference: ${files} files`);
})().catch((e) => { console.error(e); process.exit(1); });
