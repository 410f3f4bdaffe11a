import unittest

from slugkit import slugify, unique_slug


class TestSlugify(unittest.TestCase):
    def test_lowercases_and_joins_words(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_collapses_punctuation_and_spaces(self):
        self.assertEqual(slugify("  C++ -- a (very) short   guide  "), "c-a-very-short-guide")

    def test_custom_separator(self):
        self.assertEqual(slugify("Release Notes 2.0", separator="_"), "release_notes_2_0")

    def test_drops_emoji(self):
        self.assertEqual(slugify("Launch day \U0001F680"), "launch-day")

    def test_max_length_cuts_at_word_boundary(self):
        self.assertEqual(slugify("Ten Tips for Writing Good Tests", max_length=16), "ten-tips-for")


class TestUniqueSlug(unittest.TestCase):
    def test_appends_counter(self):
        self.assertEqual(unique_slug("Hello", {"hello", "hello-2"}), "hello-3")

    def test_untitled(self):
        self.assertEqual(unique_slug("!!!", []), "untitled")


if __name__ == "__main__":
    unittest.main()
