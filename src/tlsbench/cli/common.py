"""What several verbs share: the results store option and the argument types of run and ab."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tlsbench.core.dialect import DB_ENV, DEFAULT_DB
from tlsbench.core.errors import UserError


def whole(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value

    return parse


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{value:g} is outside 0..86400 seconds")
    return value


def db_option(parser: argparse.ArgumentParser, reads_only: bool) -> None:
    note = (
        "read only: never created, migrated or changed"
        if reads_only
        else "created with its folder if missing"
    )
    parser.add_argument(
        "--db",
        default=None,
        metavar="FILE|URL",
        help=f"results store: an SQLite file or a PostgreSQL URL (postgresql://...) that "
        f"several machines share ({note}; default {DEFAULT_DB}, or ${DB_ENV} where set)",
    )


def stored_name(spec: str) -> str:
    """A variant as the store names it (canonical: a local source's path made absolute);
    the spec as given when it no longer resolves (a tree since deleted)."""
    from tlsbench.builds.variants import Catalog

    try:
        return Catalog().resolve(spec).name
    except UserError:
        return spec


# A verb's parser, made by the top parser: verb(name, summary, details).
Verb = Callable[..., argparse.ArgumentParser]
