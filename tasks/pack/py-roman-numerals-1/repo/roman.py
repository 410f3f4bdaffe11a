"""Convert between integers and Roman numerals in the standard form (1 to 3999)."""

MIN_VALUE = 1
MAX_VALUE = 3999

# Largest first, subtractive pairs included, so a greedy walk yields the canonical numeral.
NUMERALS = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)

VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number: int) -> str:
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected an int, got {type(number).__name__}")
    if not MIN_VALUE <= number <= MAX_VALUE:
        raise ValueError(f"{number} is out of range {MIN_VALUE}..{MAX_VALUE}")
    parts = []
    for value, numeral in NUMERALS:
        count, number = divmod(number, value)
        parts.append(numeral * count)
    return "".join(parts)


def from_roman(text: str) -> int:
    numeral = text.strip().upper()
    if not numeral or any(ch not in VALUES for ch in numeral):
        raise ValueError(f"not a Roman numeral: {text!r}")
    total = 0
    for i, ch in enumerate(numeral):
        value = VALUES[ch]
        if i + 1 < len(numeral) and VALUES[numeral[i + 1]] > value:
            total -= value
        else:
            total += value
    # Only the canonical spelling is accepted: IIII, VX or IC are rejected.
    if not MIN_VALUE <= total <= MAX_VALUE or to_roman(total) != numeral:
        raise ValueError(f"not a canonical Roman numeral: {text!r}")
    return total


def is_roman(text: str) -> bool:
    try:
        from_roman(text)
    except ValueError:
        return False
    return True
