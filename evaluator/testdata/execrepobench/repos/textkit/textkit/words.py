import re

_WORD = re.compile(r"[a-z0-9]+")


def words(text):
    return _WORD.findall(text.lower())


def slugify(text, sep="-"):
    return sep.join(words(text))


class WordCounter:
    def __init__(self):
        self.counts = {}

    def feed(self, text):
        for w in words(text):
            self.counts[w] = self.counts.get(w, 0) + 1
        return self

    def most_common(self, n):
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[:n]
