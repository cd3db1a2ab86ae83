"""The interface every report format implements (one module per format, as in hyperfine's
src/export/): an exporter turns a RunModel into the text of one file."""

from __future__ import annotations

from typing import Protocol

from tlsbench.reportkit.model import RunModel


class Exporter(Protocol):
    name: str  # the format's name on the command line
    suffix: str  # file name extension, with the dot

    def render(self, model: RunModel) -> str:
        """The whole report in this format."""
        ...
