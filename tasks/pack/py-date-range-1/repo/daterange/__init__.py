"""Inclusive date ranges and calendar-month arithmetic."""

from daterange.core import DateRange, add_months, month_end, month_start

__all__ = ["DateRange", "add_months", "month_end", "month_start"]
