"""The README and docs/ stay true where a machine can tell: every verb and flag they name
exists, every command in the README parses, every shipped experiment, named feature and CPU
profile is documented, every relative link (and its anchor) leads somewhere, the file map
names today's files, and what `make bench` runs is what the docs say it runs.

Nothing here builds or runs a driver: the CLI's own argument parser answers for tlsbench,
drivers/core/main.c's option table for the driver, so the whole file takes a second.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tlsbench.cli import parser
from tlsbench.core import paths
from tlsbench.driver import cpuprofile

REPO = paths.REPO
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]

# Named by the docs but not on this branch yet: each arrives with another branch, which
# documents it. Remove an entry once its branch is merged, so that it is checked like
# everything else; an entry whose verb, experiment or file exists fails
# test_pending_entries_do_not_exist_yet, so none outlives its merge.
PENDING_VERBS = frozenset({})
PENDING_EXPERIMENTS: frozenset[str] = frozenset()
PENDING_FILES: frozenset[str] = frozenset()

# Options of other programs that the docs quote (build systems, tools, peers), by program.
OTHER_PROGRAMS_FLAGS = {
    "--enable-intelasm", "--enable-aesni", "--enable-ticket-nonce-malloc",  # wolfSSL configure
    "--enable-curl", "--enable-opensslextra", "--enable-staticmemory",
    "--host", "--disable-filesystem", "--enable-singlethreaded", "--with-arm-target",
    "--enable-sp", "--enable-sp-asm", "--enable-psk",
    "--peak-inaccuracy", "--heap-admin",  # valgrind massif
    "--collect-bus", "--dump-instr", "--collect-atstart",  # valgrind callgrind
    "--print-uris",  # apt-get source
    "--locked", "--offline", "--release", "--print",  # cargo, rustc
    "--specs", "--picolibc-buildtype",  # gcc (newlib; picolibc's specs)
    "--h1", "--log-file",  # h2load
    "--nonce-malloc",  # findings/wolfssl-mbedtls-ticket-nonce.sh
    "--durations",  # pytest
    "--enable-usersettings", "--enable-x", "--disable-x",  # wolfSSL configure, in general
    "--enable-dh", "--disable-dh", "--enable-pkcallbacks",
    "--minimized-build", "--enable-modules", "--build-targets", "--disable-shared-library",
    "--without-documentation", "--with-build-dir",  # Botan's configure.py
    "--enable-mldsa", "--enable-slhdsa", "--enable-dilithium", "--disable-threadlocal",
    "--with-leancrypto",  # wolfSSL's post-quantum switches; GnuTLS's leancrypto
}  # fmt: skip


# -- reading the pages ----------------------------------------------------------------------


def text_of(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def code_blocks(text: str) -> Iterator[str]:
    """Lines of fenced code blocks, an indented line joined to the one it continues."""
    inside, lines = False, []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            yield from lines
            lines = []
        elif inside and line.startswith(" ") and lines:
            lines[-1] += " " + line.strip()
        elif inside:
            lines.append(line)
    yield from lines


def prose(text: str) -> str:
    """The text outside fenced code blocks."""
    kept, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def code_spans(text: str) -> Iterator[str]:
    """Inline code of the prose, with Markdown's table escape (`\\|`) undone."""
    for span in re.findall(r"`([^`\n]+)`", prose(text)):
        yield span.replace("\\|", "|")


COMMAND = re.compile(r"^(?:\$ )?(?:\./)?tlsbench (\S.*)$")


def commands(page: Path) -> Iterator[str]:
    """Every `tlsbench ...` command a page writes: whole code spans and code-block lines
    (after a `$ ` prompt), each `&&` part apart; what follows `tlsbench `."""
    text = text_of(page)
    for candidate in [*code_spans(text), *code_blocks(text)]:
        for part in candidate.split("&&"):
            found = COMMAND.match(part.strip())
            if found:
                yield found.group(1).strip()


def is_synopsis(command: str) -> bool:
    """A usage line (optional parts, alternatives, placeholders for more) rather than a
    command someone would type."""
    return any(mark in command for mark in ("[", "]", "|", "...", "…"))


# -- what exists ----------------------------------------------------------------------------


def subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def flags_of(verb: str) -> set[str]:
    """The flags `tlsbench VERB --help` lists."""
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", subparsers()[verb].format_help()))


def driver_flags() -> set[str]:
    """The driver's long options, from its option table (no build needed): each entry's first
    string is the option's name."""
    source = (REPO / "drivers/core/options.c").read_text()
    table = source[source.index("tb_options_table[") :]
    table = table[: table.index("};")]
    entries = re.findall(r'\[TB_OPT_\w+\]\s*=\s*\w+\([^"]*"([a-z0-9-]+)"', table)
    assert len(entries) == table.count("[TB_OPT_"), "an option entry this test cannot read"
    return {f"--{name}" for name in entries} | {"--help"}


def driver_scenarios() -> set[str]:
    """The scenarios of the driver's registry: one file each in drivers/core/scenarios/."""
    folder = REPO / "drivers/core/scenarios"
    return {
        match.group(1)
        for path in folder.glob("*.c")
        if (match := re.search(r'\.name = "([a-z-]+)"', path.read_text()))
    }


def experiments() -> set[str]:
    return {path.stem for path in (REPO / "experiments").glob("*.toml")}


def flags_in(command: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", command))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(text_of(page)).splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading:
            base = slug(heading.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def rel(page: Path) -> str:
    return str(page.relative_to(REPO))


# -- the checks -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_verb_and_flag_named_exists(page: Path) -> None:
    verbs = subparsers()
    driver = driver_flags()
    wrong = []
    for command in commands(page):
        verb = command.split()[0]
        if verb in PENDING_VERBS or verb.isupper():  # VERB: a placeholder
            continue
        if verb not in verbs:
            wrong.append(f"`tlsbench {command}`: no verb {verb!r}")
            continue
        # drive and explain pass the options after the scenario to the driver.
        known = flags_of(verb) | (driver if verb in ("drive", "explain") else set())
        wrong += [f"`tlsbench {command}`: {verb} has no {flag}" for flag in
                  sorted(flags_in(command) - known)]  # fmt: skip
    assert not wrong, f"{rel(page)}:\n" + "\n".join(wrong)


def test_every_verb_and_flag_that_exists_is_in_the_cli_page() -> None:
    """The other direction: a verb or flag added to the CLI is documented in docs/cli.md."""
    page = DOCS / "cli.md"
    text = text_of(page)
    missing = []
    for verb in sorted(subparsers()):
        if f"tlsbench {verb}" not in text:
            missing.append(f"verb {verb}")
            continue
        missing += [f"{verb} {flag}" for flag in sorted(flags_of(verb) - {"--help"})
                    if f"`{flag}" not in text and f"{flag} " not in text]  # fmt: skip
    assert not missing, f"{rel(page)} says nothing of: " + ", ".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_driver_scenario_and_option_named_exists(page: Path) -> None:
    """`tlsbench-driver SCENARIO --option` lines and lone `--option` spans: an option of
    tlsbench, of the driver, or of another program the docs quote."""
    text = text_of(page)
    every = set().union(*(flags_of(v) for v in subparsers())) | driver_flags()
    wrong = []
    for line in [*code_spans(text), *code_blocks(text)]:
        line = line.strip()
        if line.startswith("tlsbench-driver "):
            scenario = line.split()[1]
            if scenario not in driver_scenarios() | {"SCENARIO"}:
                wrong.append(f"`{line}`: no driver scenario {scenario!r}")
            wrong += [f"`{line}`: the driver has no {f}" for f in flags_in(line) - driver_flags()]
        elif line.startswith("--"):
            wrong += [f"`{line}`: no such option" for f in
                      flags_in(line) - every - OTHER_PROGRAMS_FLAGS]  # fmt: skip
    assert not wrong, f"{rel(page)}:\n" + "\n".join(wrong)


def readme_commands() -> list[str]:
    return [c for c in commands(REPO / "README.md")
            if not is_synopsis(c) and not c.split()[0].isupper()]  # fmt: skip


@pytest.mark.parametrize("command", readme_commands())
def test_every_readme_command_parses(command: str) -> None:
    """argparse accepts it as typed (the parser only: nothing runs)."""
    argv = shlex.split(command)
    if argv[0] in PENDING_VERBS:
        pytest.skip(f"tlsbench {argv[0]} arrives with another branch")
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            parser().parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"`tlsbench {command}` does not parse (exit {exc.code}): {err.getvalue()}")


def test_the_readme_has_commands_to_parse() -> None:
    """The check above would pass on a README without commands."""
    assert {c.split()[0] for c in readme_commands()} >= {"run", "report"}


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_experiment_run_exists(page: Path) -> None:
    """`tlsbench run NAME` names a shipped experiment (a path or a placeholder aside)."""
    wrong = []
    for command in commands(page):
        argv = command.split()
        if argv[0] != "run" or len(argv) < 2:
            continue
        name = argv[1]
        placeholder = name.startswith("-") or name.isupper() or "[" in name
        if placeholder or name.endswith(".toml") or "/" in name:
            continue
        if name not in experiments() | PENDING_EXPERIMENTS:
            wrong.append(f"`tlsbench {command}`: no experiments/{name}.toml")
    assert not wrong, f"{rel(page)}:\n" + "\n".join(wrong)


def table_rows(page: Path, section: str | None = None) -> list[list[str]]:
    """Cells of the page's table rows (of one section's tables when a heading is given)."""
    rows, inside = [], section is None
    for line in prose(text_of(page)).splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading and section is not None:
            inside = heading.group(1) == section
        if inside and line.startswith("|") and not re.match(r"^\|[\s:|-]+\|$", line):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_every_shipped_experiment_is_documented() -> None:
    page = DOCS / "scenarios.md"
    rows = table_rows(page, "Shipped experiments")
    listed = {m.group(1) for row in rows if (m := re.fullmatch(r"`([a-z0-9-]+)`", row[0]))}
    missing = experiments() - listed
    assert not missing, f"add a row to the shipped experiments of {rel(page)}: {sorted(missing)}"
    stale = listed - experiments() - PENDING_EXPERIMENTS
    assert not stale, f"{rel(page)} lists experiments that do not exist: {sorted(stale)}"


def features() -> set[tuple[str, str]]:
    catalogue = tomllib.loads((REPO / "variants.toml").read_text())
    return {(library, feature) for library, spec in catalogue["library"].items()
            for feature in spec.get("feature", {})}  # fmt: skip


def test_every_named_feature_is_documented() -> None:
    """One row per feature in the table of docs/libraries.md: the library's key in
    parentheses, the feature in backticks."""
    page = DOCS / "libraries.md"
    rows = set()
    for row in table_rows(page):
        library = re.search(r"\(`([a-z]+)`\)", row[0])
        feature = re.fullmatch(r"`([a-z0-9-]+)`", row[1]) if len(row) > 1 else None
        if library and feature:
            rows.add((library.group(1), feature.group(1)))
    missing = features() - rows
    assert not missing, f"add these features to the table of {rel(page)}: {sorted(missing)}"
    stale = rows - features()
    assert not stale, f"{rel(page)} documents features variants.toml lacks: {sorted(stale)}"


def test_every_cpu_profile_is_documented() -> None:
    page = DOCS / "methodology.md"
    listed = {m.group(1) for row in table_rows(page) if (m := re.fullmatch(r"`([a-z0-9]+)`",
              row[0]))}  # fmt: skip
    assert set(cpuprofile.PROFILES) <= listed, f"{rel(page)}: {set(cpuprofile.PROFILES) - listed}"
    assert "make test CPU_PROFILE=avx2" in text_of(REPO / "README.md")


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    wrong = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(text_of(page))):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        if path.startswith("/"):
            wrong.append(f"({target}): an absolute path; link relative to the page")
            continue
        resolved = (page.parent / path).resolve() if path else page
        name = str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else path
        if name in PENDING_FILES:
            continue
        if not resolved.exists():
            wrong.append(f"({target}): no file {name}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            wrong.append(f"({target}): {name} has no heading with anchor #{anchor}")
    assert not wrong, f"{rel(page)}:\n" + "\n".join(wrong)


def test_pending_entries_do_not_exist_yet() -> None:
    """An allow-list entry whose thing has arrived must go, so that it is checked."""
    arrived = (
        sorted(PENDING_VERBS & set(subparsers()))
        + sorted(PENDING_EXPERIMENTS & experiments())
        + sorted(f for f in PENDING_FILES if (REPO / f).exists())
    )
    assert not arrived, f"remove from the PENDING_ lists of tests/unit/test_docs.py: {arrived}"


# -- the file map and the Makefile ----------------------------------------------------------


def mapped_paths() -> set[Path]:
    """Paths docs/internals.md names: a cell's first path anchors the bare names after it."""
    named = set()
    for row in table_rows(DOCS / "internals.md"):
        base = REPO
        for token in re.findall(r"`([^`]+)`", row[0]):
            if "/" in token:
                path = REPO / token
                base = path if token.endswith("/") else path.parent
            else:
                path = base / token
            named |= set(path.parent.glob(path.name)) if "*" in token else {path}
    return named


def test_the_file_map_names_files_that_exist() -> None:
    missing = sorted(str(p.relative_to(REPO)) for p in mapped_paths() if not p.exists())
    assert not missing, f"docs/internals.md names files that do not exist: {missing}"


def test_the_file_map_names_every_module_and_c_source() -> None:
    named = mapped_paths()
    sources = [*REPO.glob("src/tlsbench/**/*.py"), *REPO.glob("drivers/**/*.[ch]"),
               *REPO.glob("drivers/**/*.cpp"), *REPO.glob("drivers/**/*.ld")]  # fmt: skip
    unnamed = sorted(
        str(p.relative_to(REPO))
        for p in sources
        if p not in named and not any(d in named for d in p.parents)
    )
    assert not unnamed, f"add to docs/internals.md, with what each does: {unnamed}"


def make_bench_scripts() -> list[str]:
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert recipe, "the Makefile has a bench target"
    return re.findall(r"bench/[a-z0-9_]+\.py", recipe.group(1))


def test_make_bench_runs_what_the_docs_say() -> None:
    page = DOCS / "results.md"
    said = re.search(r"`make bench` runs (.+?)\.(?:\s|$)", " ".join(text_of(page).split()))
    assert said, f"{rel(page)} says what `make bench` runs"
    assert sorted(re.findall(r"bench/[a-z0-9_]+\.py", said.group(1))) == sorted(
        make_bench_scripts()
    )
    scripts = {f"bench/{p.name}" for p in (REPO / "bench").glob("*.py")}
    unnamed = sorted(s for s in scripts if s not in text_of(page))
    assert not unnamed, f"{rel(page)} says nothing of {unnamed}"
