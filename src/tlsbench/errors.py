"""Errors a user can act on: printed as one clear message, never as a traceback."""


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
