"""Errors a user can act on: printed as one clear message, never as a traceback."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Something the user asked for or set up is wrong; the message says what to do.

    `exit_code` follows the CLI convention: 2 for bad input, 1 for a failed operation.
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class BuildError(UserError):
    """A library or driver build failed; the message carries the log tail and path."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=1)


def read_user_file(path: Path) -> str:
    """The text of a file a user edits (experiments, variants.toml, pins.toml), or a clear
    error when it cannot be read or is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}: not UTF-8 text (byte {exc.start}): it must be a TOML file"
        ) from exc
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a TOML file") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from exc
