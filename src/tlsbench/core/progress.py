"""Progress on stderr that suits both readers: a person at a terminal and a CI log.

At a terminal every line is shown (the runner redraws its bar in place). Without one (a CI
job, `make run > log`), a log of a cold `make run` would be well over a thousand lines of
progress, so there are two kinds of line: an *event* (a point or a build finished, a
failure) is always written; a *status* line (what runs now, the ETA) at most once every
STATUS_INTERVAL seconds, since the last line of either kind.
"""

from __future__ import annotations

import sys
import threading
import time

STATUS_INTERVAL = 10.0  # seconds between status lines without a terminal

_lock = threading.Lock()
_last_written = float("-inf")


def interactive() -> bool:
    """Whether stderr is a terminal (a bar redrawn in place, every step shown)."""
    return sys.stderr.isatty()


def event(line: str) -> None:
    """A line worth keeping in a log: always written."""
    global _last_written
    with _lock:
        print(line, file=sys.stderr, flush=True)
        _last_written = time.monotonic()


def status(line: str) -> None:
    """A line about what runs now: always at a terminal, else at most every STATUS_INTERVAL."""
    global _last_written
    with _lock:
        now = time.monotonic()
        if not interactive() and now - _last_written < STATUS_INTERVAL:
            return
        print(line, file=sys.stderr, flush=True)
        _last_written = now
