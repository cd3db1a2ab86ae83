"""Rewrites the outputs the docs show below their long commands (firmware and calibration),
from the commands run as the tests run them: for after a change that moves figures on
purpose (another certificate set, a new projection), so that the pages show what a user gets.

    .venv/bin/python tests/rewrite_docs.py                  # every long command shown with output
    .venv/bin/python tests/rewrite_docs.py --verb cortex-m  # one verb's
    .venv/bin/python tests/rewrite_docs.py --dry-run        # say which blocks would change
    .venv/bin/python tests/rewrite_docs.py "--match=--core m4"  # only commands written so

`fit` runs unnarrowed here (the page shows every candidate; the test checks one line's rows),
so a first rewrite builds every candidate of the core. The tests
(tests/long/test_fit_as_written.py) stay the judge: this only saves retyping.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from documented_commands import REPO, Documented, _clean, documented, how_to_run, shown_output
from tlsbench.builds.sources import Sources

VERBS = ("cortex-m", "calibrate", "fit", "model-check")


def printed_lines(doc: Documented, folder: Path) -> list[str]:
    """What the command prints, as the page shows it (the test's transformations)."""
    verb = doc.written.split()[0]
    argv = shlex.split(doc.written) if verb == "fit" else how_to_run(doc.written)[1]
    for word in argv:
        if word.startswith("config=") or ",config=" in word:
            name = word.split("config=", 1)[1].split(",", 1)[0]
            if name.endswith(".h") and "/" not in name:
                source = Sources().source_dir("mbedtls-3.6.6") / "configs" / name
                shutil.copy(source, folder / name)
    for name in re.findall(r"config=(docs/[\w./-]+)", doc.written):  # the repository's own
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, folder / name)
    done = subprocess.run([str(REPO / "tlsbench"), *argv], cwd=folder, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if verb == "cortex-m":
        text = (done.stdout + done.stderr).replace(str(folder), "/src")
        return [line.rstrip() for line in text.splitlines()
                if "the platform's macro replaces" not in line]  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"tlsbench {' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    printed = done.stdout.splitlines()
    if verb == "calibrate":  # the page shows the summary that ends the output
        first = shown_output(doc)[0]
        return printed[printed.index(first) :] if first in printed else printed
    return printed


def rewrite(doc: Documented, lines: list[str]) -> bool:
    """Replaces the block below the command on its page; whether anything changed."""
    page = REPO / doc.page
    text = page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(text):
        stripped = line.strip()
        if stripped.startswith("$ ") and "tlsbench " in stripped:
            written = _clean(stripped.split("tlsbench ", 1)[1])
            if written != doc.written:
                continue
            end = number + 1
            while not text[end].lstrip().startswith("```"):
                end += 1
            if text[number + 1 : end] == lines:
                return False
            page.write_text("\n".join([*text[: number + 1], *lines, *text[end:]]) + "\n",
                            encoding="utf-8")  # fmt: skip
            return True
    raise SystemExit(f"{doc.id}: not found on its page")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verb", choices=VERBS, action="append")
    parser.add_argument("--page", help="only this page (e.g. docs/embedded.md)")
    parser.add_argument(
        "--match",
        action="append",
        metavar="TEXT",
        help="only the commands written with TEXT (repeatable: any of them)",
    )
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    verbs = args.verb or list(VERBS)
    docs = [d for d in documented() if d.shown_with_output and d.written.split()[0] in verbs
            and (args.page is None or d.page == args.page)
            and (not args.match or any(m in d.written for m in args.match))]  # fmt: skip
    for doc in docs:
        with tempfile.TemporaryDirectory(prefix="tlsbench-rewrite-") as folder:
            print(f"running: tlsbench {doc.written}", file=sys.stderr, flush=True)
            lines = printed_lines(doc, Path(folder))
        if args.dry_run:
            same = lines == shown_output(doc)
            print(f"{doc.id}: {'unchanged' if same else 'would change'}")
        elif rewrite(doc, lines):
            print(f"{doc.id}: rewritten")
        else:
            print(f"{doc.id}: unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
