"""`key  value` rows for a terminal, wrapped at words: what bootstrap's summary and `fleet health` print there.

    for line in terminal_lines([("next", "fleet apply --limit pod-a")], console.width):
        console.print(line, soft_wrap=True)

A word is never cut: rich's overflow="fold" broke a token longer than its column mid-word (`cud`/`a_keyring_pins`, an
inventory's path, a GPU's UUID that a renter copies into a report to the provider).
"""

from __future__ import annotations


def terminal_lines(rows: list[tuple[str, str]], width: int, hang: int = 0) -> list:
    """`key  value` rows for a terminal `width` columns wide, as rich Text lines: the keys (bold) in one column, each
    value wrapped at spaces inside the column after them. A word never breaks: one longer than that column (a path,
    a URL) takes a line of its own, whole, as near its column as it fits (rich's overflow="fold" cut `cud`/`a_keyring_pins` and an
    inventory's path mid-word). A value's leading spaces (a sub-item) indent its following lines too, and `hang` more
    spaces (a value that begins with a column of its own: `fleet decide`'s); a newline in a value starts a line."""
    import textwrap

    from rich.text import Text

    keys = max((len(key) for key, _ in rows), default=0)
    column = max(width - keys - 4, 16)
    lines = []
    for key, value in rows:
        lead = value[:len(value) - len(value.lstrip(" "))]
        more = lead + " " * hang
        wrapped = []
        for i, paragraph in enumerate(value.split("\n")):
            wrapped += textwrap.wrap(paragraph if i == 0 else more + paragraph.strip(" "), column,
                                     subsequent_indent=more, break_long_words=False, break_on_hyphens=False)
        for i, part in enumerate(wrapped or [""]):
            head = Text("  ") + Text((key if i == 0 else "").ljust(keys), style="bold") + Text("  ")
            if len(part) > column:   # one word, too long for the column: a line of its own, as far in as it fits
                word = part.strip()
                head = Text(" " * max(0, min(4 + keys + len(more), width - len(word))))
                if i == 0 and key:
                    lines.append(Text("  ") + Text(key, style="bold"))
                part = word
            lines.append(head + Text(part))
    return lines
