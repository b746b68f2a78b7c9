import unittest

from textkit.words import WordCounter, slugify, words


class WordsTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(words("Hello, World 42!"), ["hello", "world", "42"])

    def test_slugify(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")
        self.assertEqual(slugify("a b", sep="_"), "a_b")

    def test_counter(self):
        c = WordCounter().feed("b a b").feed("c b a")
        self.assertEqual(c.most_common(2), [("b", 3), ("a", 2)])


if __name__ == "__main__":
    unittest.main()
