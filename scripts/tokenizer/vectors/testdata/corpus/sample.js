'use strict';
// JavaScript sample: classes, arrow functions, template literals, regexes.
const fs = require('fs');
const path = require('node:path');

class EventEmitter {
  #handlers = new Map();

  on(event, fn) {
    if (!this.#handlers.has(event)) this.#handlers.set(event, []);
    this.#handlers.get(event).push(fn);
    return () => this.off(event, fn);
  }

  off(event, fn) {
    const list = this.#handlers.get(event) ?? [];
    this.#handlers.set(event, list.filter((f) => f !== fn));
  }

  emit(event, ...args) {
    for (const fn of this.#handlers.get(event) || []) fn.apply(this, args);
  }
}

const debounce = (fn, ms = 250) => {
  let t;
  return (...a) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
};

async function readJSON(file) {
  const text = await fs.promises.readFile(path.resolve(__dirname, file), 'utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    console.error(`bad JSON in ${file}: ${err.message}`);
    return null;
  }
}

const re = /^(?<year>\d{4})-(?<month>\d{2})-(?<day>\d{2})$/u;
const m = '2024-12-31'.match(re);
const { year, month, day } = m?.groups ?? {};
const nums = [1, 2, 3, 4.5, -6e7, 0b1010, 0o17, 0xdeadbeef, 10n ** 20n];
const total = nums.filter((n) => typeof n === 'number').reduce((a, b) => a + b, 0);
const obj = { year, month, day, total, 'quoted-key': true, [Symbol.iterator]: null };
module.exports = { EventEmitter, debounce, readJSON, obj };
if (require.main === module) {
  console.log(JSON.stringify(obj, null, 2), "it's done", 'we\'ll see');
}
