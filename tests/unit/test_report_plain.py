"""A table for a pipe or a file (fleet.report.plain_table): each cell is its markup's plain text. A cell with neither
a tag's "[" nor an emoji code's ":" skips Rich's markup parser (~80 µs a cell: ~900 cells per `fleet facts` of one
host); it must read exactly as the parser would read it."""

import random
import string

from rich.table import Table
from rich.text import Text

from fleet.report import _plain, plain_table


def test_a_cell_without_markup_reads_as_rich_reads_it():
    rng = random.Random(34)
    alphabet = string.ascii_letters + string.digits + " \t\n/.-_=@%&*()!?\\\"'\x1b\u00e9[]:"
    for _ in range(3000):
        cell = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert _plain(cell) == " ".join(Text.from_markup(cell).plain.replace("\t", " ").split("\n")).strip(), cell


def test_tags_and_emoji_codes_still_go_through_the_parser():
    assert _plain("[bold]in state[/bold]") == "in state"
    assert _plain(":warning: stale") == Text.from_markup(":warning: stale").plain
    table = Table("fact", "pod-1", title="[b]facts[/b]")
    table.add_row("driver", "580.159.04\tx")
    assert plain_table(table) == "facts\nfact\tpod-1\ndriver\t580.159.04 x"
