import unittest
from datetime import date

from daterange import DateRange, add_months, month_end


class TestAddMonths(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(add_months(date(2024, 3, 15), 2), date(2024, 5, 15))

    def test_clamps_to_month_end(self):
        self.assertEqual(add_months(date(2023, 1, 31), 1), date(2023, 2, 28))
        self.assertEqual(add_months(date(2024, 1, 31), 1), date(2024, 2, 29))

    def test_crosses_year(self):
        self.assertEqual(add_months(date(2023, 10, 5), 4), date(2024, 2, 5))


class TestDateRange(unittest.TestCase):
    def test_length_and_membership(self):
        r = DateRange(date(2024, 2, 27), date(2024, 3, 2))
        self.assertEqual(len(r), 5)
        self.assertIn(date(2024, 2, 29), r)
        self.assertNotIn(date(2024, 3, 3), r)

    def test_overlap(self):
        a = DateRange(date(2024, 1, 1), date(2024, 1, 10))
        b = DateRange(date(2024, 1, 10), date(2024, 1, 20))
        self.assertTrue(a.overlaps(b))
        self.assertEqual(a.intersection(b), DateRange(date(2024, 1, 10), date(2024, 1, 10)))

    def test_split_by_month(self):
        r = DateRange(date(2024, 3, 20), date(2024, 5, 5))
        self.assertEqual(
            [(p.start, p.end) for p in r.split_by_month()],
            [
                (date(2024, 3, 20), date(2024, 3, 31)),
                (date(2024, 4, 1), date(2024, 4, 30)),
                (date(2024, 5, 1), date(2024, 5, 5)),
            ],
        )

    def test_month_end(self):
        self.assertEqual(month_end(date(2023, 2, 10)), date(2023, 2, 28))


if __name__ == "__main__":
    unittest.main()
