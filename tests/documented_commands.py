"""The commands the README and docs/ tell a user to type, and how the tests run each as
written: the README's question and command tables, and every command a page shows with its
output (a `$ ./tlsbench ...` line of a code block).

A long command runs bounded, never as another verb or with a default the docs do not show:
an experiment with `--dry-run`, `fit` narrowed to one line, configuration and record size
with `--line`, `--config` and `--records`, `ab` to the points of one handshake with `--only`.
A placeholder (A, B, RUN, SIZE, CORE) takes a value the test provides. Where a command is
run decides its tier: `unit` needs no library build, `long` builds firmware or a tree.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
EXPERIMENTS = {p.stem for p in (REPO / "experiments").glob("*.toml")}

TLSBENCH = re.compile(r"(?:\./)?tlsbench (\S[^`]*)")
# The README's sections whose tables (and the lines about them) hold the commands to type.
README_SECTIONS = ("## Your question, the command", "## Command line")
# Placeholders of the README's command table and the values the tests give them: two runs
# the test stores first, and the README's own microcontroller.
PLACEHOLDERS = {"A": "1", "B": "2", "RUN": "1"}
FIT_PLACEHOLDERS = {"SIZE": None, "CORE": "m4"}
# `fit` narrowed to one candidate per core: wolfSSL's `small` configuration (the one whose
# features override the base), a record size the page shows.
FIT_NARROWING = {
    "m4": ["--line", "wolfssl-5.7.2", "--config", "small", "--records", "16384"],
    "m0": ["--line", "wolfssl-5.7.2", "--config", "small", "--records", "512"],
    "rv32imc": ["--line", "wolfssl-5.7.2", "--config", "small", "--records", "16384"],
}
# `ab` narrowed to the TLS 1.3 handshake of experiments/ab.toml.
AB_NARROWING = ["--only", "scenario=handshake", "--only", "tls=1.3"]


@dataclass(frozen=True)
class Documented:
    page: str  # README.md, docs/embedded.md
    written: str  # what follows `tlsbench ` on the page
    shown_with_output: bool

    @property
    def id(self) -> str:
        return f"{self.page}: {self.written}"


def _is_synopsis(command: str) -> bool:
    return any(mark in command for mark in ("[", "]", "|", "...", "…"))


def _section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


def _clean(command: str) -> str:
    return command.split("#", 1)[0].strip() if " #" in command else command.strip()


def documented() -> list[Documented]:
    """Every command the tests must run, once each per page."""
    found: dict[tuple[str, str], Documented] = {}
    readme = README.read_text(encoding="utf-8")
    for heading in README_SECTIONS:
        for line in _section(readme, heading).splitlines():
            for span in re.findall(r"`([^`\n]+)`", line):
                match = TLSBENCH.fullmatch(span.replace("\\|", "|").strip())
                if match and not _is_synopsis(match.group(1)):
                    written = _clean(match.group(1))
                    found.setdefault(("README.md", written),
                                     Documented("README.md", written, False))  # fmt: skip
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        name = page.relative_to(REPO).as_posix()
        inside = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                inside = not inside
                continue
            match = re.fullmatch(r"\$ (?:\./)?tlsbench (\S.*)", line.strip())
            if inside and match:
                written = _clean(match.group(1))
                found[(name, written)] = Documented(name, written, True)
    return list(found.values())


def how_to_run(written: str) -> tuple[str, list[str]]:
    """(tier, argv after `tlsbench`) for a documented command; a command no rule covers is
    an error, so that a new one in the docs gets a way to run before it merges."""
    argv = shlex.split(written)
    verb = argv[0]
    if verb == "fit":
        values = dict(zip(argv[1::2], argv[2::2], strict=False))
        if values.get("--ram") == "SIZE":  # the command table's synopsis: the README's part
            argv = ["fit", "--ram", "64K", "--flash", "256K", "--core", "m4"]
            values = dict(zip(argv[1::2], argv[2::2], strict=False))
        core = values.get("--core")
        if core is None:  # `--part NAME`: the part's core
            from tlsbench.embedded import parts

            core = parts.part_named(values["--part"]).core.removeprefix("cortex-")
        return "long", [*argv, *FIT_NARROWING[core]]
    if verb == "ab":
        return "long", [*argv, *AB_NARROWING]
    if verb == "bisect":  # builds commits of a clone the test makes (test_own_code.py)
        return "long", argv
    if verb == "cortex-m":  # one firmware job, or its refusal, as written
        return "long", argv
    if verb == "drive":  # one driver run of a built variant, as written (bounded by itself)
        return "long", argv
    if verb == "explain":  # callgrind runs of a built variant, as written (10 handshakes)
        return "long", argv
    if verb == "calibrate":  # builds wolfSSL's firmware per core; never --write in a test
        return "long", [word for word in argv if word != "--write"]
    if verb == "model-check":  # builds p256-m per board core and runs the model; no --write
        return "long", [word for word in argv if word != "--write"]
    argv = [PLACEHOLDERS.get(word, word) for word in argv]
    if verb == "run" and len(argv) > 1 and argv[1] in EXPERIMENTS:
        return "unit", [*argv, "--dry-run"]
    if verb == "VERB":  # `./tlsbench VERB --help`: every verb's
        return "unit", argv
    if verb == "certs" and len(argv) == 1:
        # Every kind: the post-quantum and mixed ones are made by the pinned OpenSSL build,
        # which the unit tier's fake builds do not have (tests/libraries/test_pq_certs.py makes
        # them for real); here the kinds Python derives, rsa8192's minutes left out.
        from tlsbench.builds import certs

        derived = [kind for kind in certs.KINDS if kind not in certs.TOOL_KINDS]
        return "unit", ["certs", *(kind for kind in derived if kind != "rsa8192")]
    if verb in ("run", "report", "compare", "runs", "migrate", "certs", "build"):
        return "unit", argv
    raise AssertionError(f"no way to run `tlsbench {written}` in tests/documented_commands.py")


def shown_output(doc: Documented) -> list[str]:
    """The lines a page shows below the command, to the end of its code block."""
    lines = (REPO / doc.page).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        match = re.fullmatch(r"\$ (?:\./)?tlsbench (\S.*)", line.strip())
        if match and _clean(match.group(1)) == doc.written:
            shown = []
            for after in lines[number + 1 :]:
                if after.lstrip().startswith("```"):
                    return shown
                shown.append(after)
    raise AssertionError(f"{doc.id}: not shown with output")
