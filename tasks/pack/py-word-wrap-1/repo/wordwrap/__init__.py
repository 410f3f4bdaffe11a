"""Greedy word wrapping: fill each line with as many words as fit, then start a new one."""

from typing import List


def _chunks(word: str, size: int) -> List[str]:
    return [word[i:i + size] for i in range(0, len(word), size)]


def wrap(text: str, width: int, indent: str = "") -> List[str]:
    """Lines of at most `width` characters, each starting with `indent`."""
    room = width - len(indent)
    if room < 1:
        raise ValueError(f"width {width} leaves no room after indent {indent!r}")
    lines: List[str] = []
    current = ""
    for word in text.split():
        pieces = _chunks(word, room) if len(word) > room else [word]
        for piece in pieces:
            if not current:
                current = piece
            elif len(current) + 1 + len(piece) < room:
                current += " " + piece
            else:
                lines.append(current)
                current = piece
    if current:
        lines.append(current)
    return [indent + line for line in lines]


def fill(text: str, width: int, indent: str = "") -> str:
    return "\n".join(wrap(text, width, indent))


def wrap_paragraphs(text: str, width: int) -> str:
    """Wrap each blank-line separated paragraph on its own, keeping one blank line between them."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(fill(p, width) for p in paragraphs)
