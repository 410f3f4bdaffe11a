import unittest

from wordwrap import fill, wrap, wrap_paragraphs


class TestWrap(unittest.TestCase):
    def test_wraps_sentence(self):
        self.assertEqual(
            wrap("The quick brown fox jumps over the lazy dog", 16),
            ["The quick brown", "fox jumps over", "the lazy dog"],
        )

    def test_collapses_whitespace(self):
        self.assertEqual(wrap("  a \t b\n\nc  ", 40), ["a b c"])

    def test_empty_text(self):
        self.assertEqual(wrap("", 10), [])

    def test_splits_long_words(self):
        self.assertEqual(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"])

    def test_rejects_width_smaller_than_indent(self):
        with self.assertRaises(ValueError):
            wrap("text", 2, indent="  ")


class TestFill(unittest.TestCase):
    def test_fill_with_indent(self):
        self.assertEqual(fill("one two three", 8, indent="> "), "> one\n> two\n> three")

    def test_paragraphs(self):
        self.assertEqual(wrap_paragraphs("aa bb cc\n\ndd", 6), "aa bb\ncc\n\ndd")


if __name__ == "__main__":
    unittest.main()
