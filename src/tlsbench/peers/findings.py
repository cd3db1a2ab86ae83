"""Known library incompatibilities of the interop matrix: the registry in
findings/findings.toml, which the report consults to say, per failed cell, whether it is a
finding (with the command that shows it without tlsbench) or still unexplained.

A finding matches a failed cell by its client and server, the point's options it names in
`when` and a pattern of the failure's own words, so that a different failure of the same
pair stays unexplained. Every entry is exercised by tests/long/test_findings_reproduce.py:
its reproduction must still print what `expect` says, and its interop point must still fail
as `error` says.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.core import paths
from tlsbench.core.errors import UserError, read_user_file
from tlsbench.peers import programs

FINDINGS_FILE = paths.REPO / "findings" / "findings.toml"
# What the report says of a failed cell that no finding explains.
UNEXPLAINED = "unexplained: harness fault until shown otherwise"
# The value an interop point's option has when the point leaves it out (the driver's and
# the runner's defaults), for `when` to compare against.
OPTION_DEFAULTS = {"tls": "1.3", "resume": "off", "auth": "server", "role": "client",
                   "cert": "rsa2048", "chain": "1"}  # fmt: skip
REQUIRED = ("id", "title", "client", "server", "error", "cause", "reproduce", "expect")
KEYS = (*REQUIRED, "when")
# A reproduction builds the libraries' example programs (seconds) and runs them.
REPRODUCE_TIMEOUT_S = 900


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    client: str  # a variant or a real program, as the interop grid names it
    server: str
    when: dict[str, str]  # point options that must hold (missing ones: OPTION_DEFAULTS)
    error: re.Pattern[str]  # searched in the cell's failure message
    cause: str
    reproduce: str  # a shell command, run from the repository root
    expect: tuple[re.Pattern[str], ...]  # each must be in the reproduction's output

    def explains(self, client: str, server: str, params: dict[str, Any], failure: str) -> bool:
        if (client, server) != (self.client, self.server):
            return False
        for key, wanted in self.when.items():
            value = params.get(key, OPTION_DEFAULTS.get(key))
            if value is None or str(value) != wanted:
                return False
        return self.error.search(failure) is not None

    def point(self) -> tuple[str, dict[str, str]]:
        """The interop point that shows the finding: its variant and its options (`peer`,
        `role` and `when`)."""
        if programs.is_program(self.client) and programs.program(self.client).role == "client":
            return self.server, {"role": "server", "peer": self.client, **self.when}
        return self.client, {"peer": self.server, **self.when}


def load(path: Path = FINDINGS_FILE) -> list[Finding]:
    """The registry, checked: a malformed entry is a clear error naming the file and entry."""
    try:
        data = tomllib.loads(read_user_file(path))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    unknown = set(data) - {"finding"}
    if unknown:
        raise UserError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}: only "
                        "[[finding]] entries belong here")  # fmt: skip
    entries = data.get("finding", [])
    if not isinstance(entries, list):
        raise UserError(f"{path}: `finding` must be an array of tables ([[finding]])")
    found: list[Finding] = []
    for index, entry in enumerate(entries, 1):
        finding = _finding(entry, f"{path}: finding {index}")
        if any(f.id == finding.id for f in found):
            raise UserError(f"{path}: two findings have the id {finding.id!r}")
        found.append(finding)
    return found


def _finding(entry: dict[str, Any], where: str) -> Finding:
    missing = [key for key in REQUIRED if key not in entry]
    unknown = sorted(set(entry) - set(KEYS))
    if missing or unknown:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown key(s) {', '.join(unknown)}"] if unknown else [])  # fmt: skip
        raise UserError(f"{where}: {'; '.join(problems)} (keys: {', '.join(KEYS)})")
    where = f"{where} ({entry['id']!r})"
    for key in ("id", "title", "client", "server", "error", "cause", "reproduce"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise UserError(f"{where}: `{key}` must be a non-empty string")
    when = entry.get("when", {})
    if not isinstance(when, dict) or not all(isinstance(v, str) for v in when.values()):
        raise UserError(f'{where}: `when` must be a table of strings, e.g. {{ tls = "1.3" }}')
    expect = entry["expect"]
    if isinstance(expect, str):
        expect = [expect]
    if not isinstance(expect, list) or not expect or not all(isinstance(e, str) for e in expect):
        raise UserError(f"{where}: `expect` must be a pattern or a list of patterns")
    return Finding(
        id=entry["id"],
        title=entry["title"].strip(),
        client=entry["client"],
        server=entry["server"],
        when=dict(when),
        error=_pattern(entry["error"], where, "error"),
        cause=" ".join(entry["cause"].split()),
        reproduce=entry["reproduce"].strip(),
        expect=tuple(_pattern(e, where, "expect") for e in expect),
    )


def _pattern(text: str, where: str, key: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise UserError(f"{where}: `{key}` is not a regular expression ({exc}): {text!r}") from None


def explain(findings: list[Finding], client: str, server: str, params: dict[str, Any],
            failure: str) -> Finding | None:  # fmt: skip
    """The finding that explains a failed cell, or None (then: UNEXPLAINED)."""
    return next((f for f in findings if f.explains(client, server, params, failure)), None)


@dataclass(frozen=True)
class Reproduction:
    reproduced: bool  # every `expect` pattern is in the output
    missing: tuple[str, ...]  # the patterns that are not
    output: str  # stdout and stderr together
    exit_code: int | None  # None: it did not finish in time


def reproduce(finding: Finding, timeout: float = REPRODUCE_TIMEOUT_S) -> Reproduction:
    """Runs the finding's reproduction from the repository root."""
    try:
        proc = subprocess.run(["bash", "-c", finding.reproduce], cwd=paths.REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout, check=False)  # fmt: skip
        output, code = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout
        output = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
        code = None
    missing = tuple(p.pattern for p in finding.expect if p.search(output) is None)
    return Reproduction(not missing, missing, output, code)
