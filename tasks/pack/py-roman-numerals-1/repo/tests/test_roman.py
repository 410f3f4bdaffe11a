import unittest

from roman import from_roman, is_roman, to_roman


class TestToRoman(unittest.TestCase):
    def test_small_numbers(self):
        self.assertEqual([to_roman(n) for n in range(1, 11)],
                         ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"])

    def test_subtractive_forms(self):
        self.assertEqual(to_roman(1994), "MCMXCIV")
        self.assertEqual(to_roman(49), "XLIX")

    def test_out_of_range(self):
        with self.assertRaises(ValueError):
            to_roman(0)
        with self.assertRaises(ValueError):
            to_roman(4000)


class TestFromRoman(unittest.TestCase):
    def test_reads_numerals(self):
        self.assertEqual(from_roman("MMXXIV"), 2024)
        self.assertEqual(from_roman("xlii"), 42)

    def test_rejects_non_canonical(self):
        self.assertFalse(is_roman("IIII"))
        self.assertFalse(is_roman("VX"))
        self.assertFalse(is_roman("ABC"))


if __name__ == "__main__":
    unittest.main()
