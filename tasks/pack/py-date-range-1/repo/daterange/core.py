import calendar
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Iterator, List, Optional


def month_start(day: date) -> date:
    return day.replace(day=1)


def month_end(day: date) -> date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


def add_months(day: date, months: int) -> date:
    """Move by whole calendar months, clamping the day to the length of the target month."""
    month_index = day.month + months
    year = day.year + month_index // 12
    month = month_index % 12
    last_day = calendar.monthrange(year, month)[1]
    return date(year, month, min(day.day, last_day))


@dataclass(frozen=True)
class DateRange:
    """All days from start to end, both included."""

    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")

    def __contains__(self, day: date) -> bool:
        return self.start <= day <= self.end

    def __len__(self) -> int:
        return (self.end - self.start).days + 1

    def days(self) -> Iterator[date]:
        for offset in range(len(self)):
            yield self.start + timedelta(days=offset)

    def overlaps(self, other: "DateRange") -> bool:
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: "DateRange") -> Optional["DateRange"]:
        if not self.overlaps(other):
            return None
        return DateRange(max(self.start, other.start), min(self.end, other.end))

    def split_by_month(self) -> List["DateRange"]:
        """The range cut at month boundaries, one piece per calendar month it touches."""
        pieces = []
        cursor = self.start
        while cursor <= self.end:
            next_month = add_months(month_start(cursor), 1)
            pieces.append(DateRange(cursor, min(self.end, next_month - timedelta(days=1))))
            cursor = next_month
        return pieces
