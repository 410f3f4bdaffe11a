"""URL slugs from arbitrary titles."""

import re
import unicodedata
from typing import Iterable, Optional

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def to_ascii(text: str) -> str:
    """Transliterate accented letters to ASCII and drop everything else that is not ASCII."""
    normalized = unicodedata.normalize("NFC", text)
    return normalized.encode("ascii", "ignore").decode("ascii")


def slugify(text: str, separator: str = "-", max_length: Optional[int] = None) -> str:
    slug = _NOT_ALNUM.sub(separator, to_ascii(text).lower()).strip(separator)
    if max_length is not None and len(slug) > max_length:
        cut = slug[:max_length]
        # Prefer ending at a word boundary over ending in the middle of a word.
        if slug[max_length] != separator and separator in cut:
            cut = cut.rsplit(separator, 1)[0]
        slug = cut.strip(separator)
    return slug


def unique_slug(text: str, taken: Iterable[str], separator: str = "-") -> str:
    """The slug of `text`, with -2, -3, ... appended until it is not in `taken`."""
    base = slugify(text, separator) or "untitled"
    existing = set(taken)
    candidate = base
    counter = 2
    while candidate in existing:
        candidate = f"{base}{separator}{counter}"
        counter += 1
    return candidate
