"""Your own code, end to end on real mbedTLS builds: `tlsbench ab` names a regression of a
commit and gives exit 1, passes a commit that changes only a comment, and judges two
config files by their heap.

The git repository is made from the pinned mbedTLS 3.6.6 source as a development branch
holds it (the generated files are not committed: library/.gitignore lists them, and the
build generates them), with three commits:

- `release`: mbedTLS 3.6.6;
- `regression` (on release): every handshake step hashes a 16 KiB scratch buffer it keeps
  until the step ends: more instructions per handshake and a higher heap peak per side;
- `comment` (on release): one comment reworded, nothing else;
- `one-function` (on release): `mbedtls_ssl_handshake_step` spins a counter before each
  step: more instructions in that one function, nothing else (`ab` names it first).

The commands are the ones docs/own-code.md shows. Cost: three mbedTLS builds from git and
two config builds (cached in ~/.cache/tlsbench by content, so a second run skips them), the
`one-function` build and
four short A/B runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from documented_commands import documented, how_to_run
from drivers import tlsbench
from tlsbench.builds.recipes import wolfssl as wolfssl_recipe
from tlsbench.builds.sources import Sources
from tlsbench.core.store import Store

pytestmark = pytest.mark.slow

GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org",
           "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}  # fmt: skip
SCRATCH = """
    /* Every step hashes a scratch area of its own, kept until the step ends. */
    scratch = mbedtls_calloc(1, SCRATCH_LEN);
    if (scratch == NULL) {
        return MBEDTLS_ERR_SSL_ALLOC_FAILED;
    }
    ret = mbedtls_sha256(scratch, SCRATCH_LEN, digest, 0);
    if (ret != 0) {
        goto cleanup;
    }
"""


SPIN = """
    {
        /* Work in this function alone: a counter spun before every step. */
        volatile unsigned spin = 0;
        for (unsigned i = 0; i < 20000; i++) {
            spin += i;
        }
    }
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, check=True)  # fmt: skip
    return done.stdout.strip()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name}: {old!r} is not there once"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the repository `mbedtls` (three commits) and two config files."""
    work = tmp_path_factory.mktemp("own-code")
    repo = work / "mbedtls"
    shutil.copytree(Sources().source_dir("mbedtls-3.6.6"), repo)
    # As on a development branch: the generated files ignored, not committed.
    ignore = repo / "library" / ".gitignore"
    text = ignore.read_text()
    block = re.search(r"####START_COMMENTED_GENERATED_FILES###\n(.*?)"
                      r"####END_COMMENTED_GENERATED_FILES###", text, re.S)  # fmt: skip
    assert block is not None
    names = [line.lstrip("#") for line in block.group(1).split()]
    ignore.write_text(text.replace(block.group(0), "###START_GENERATED_FILES###\n"
                                   + "\n".join(names) + "\n###END_GENERATED_FILES###"))  # fmt: skip
    for name in names:
        (repo / "library" / name.lstrip("/")).unlink()
    git(repo, "init", "-q", "-b", "release")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "mbedTLS 3.6.6")
    ssl_tls = repo / "library" / "ssl_tls.c"
    git(repo, "checkout", "-qb", "regression")
    edit(
        ssl_tls,
        '#include "mbedtls/version.h"\n',
        '#include "mbedtls/version.h"\n#include "mbedtls/sha256.h"\n\n#define SCRATCH_LEN 16384\n',
    )
    edit(
        ssl_tls,
        """int mbedtls_ssl_handshake_step(mbedtls_ssl_context *ssl)
{
    int ret = MBEDTLS_ERR_ERROR_CORRUPTION_DETECTED;
""",
        """int mbedtls_ssl_handshake_step(mbedtls_ssl_context *ssl)
{
    int ret = MBEDTLS_ERR_ERROR_CORRUPTION_DETECTED;
    unsigned char *scratch = NULL;
    unsigned char digest[32];
""",
    )
    edit(
        ssl_tls,
        """    ret = ssl_prepare_handshake_step(ssl);
    if (ret != 0) {
        return ret;
    }
""",
        """    ret = ssl_prepare_handshake_step(ssl);
    if (ret != 0) {
        return ret;
    }
"""
        + SCRATCH,
    )
    edit(ssl_tls, "cleanup:\n    return ret;\n}\n\n/*\n * Perform the SSL handshake\n",
         "cleanup:\n    mbedtls_free(scratch);\n    return ret;\n}\n\n/*\n"
         " * Perform the SSL handshake\n")  # fmt: skip
    git(repo, "commit", "-qam", "Handshake: hash a 16 KiB scratch area at every step")
    git(repo, "checkout", "-q", "release")
    git(repo, "checkout", "-qb", "comment")
    edit(
        ssl_tls,
        " * Perform the SSL handshake\n",
        " * Perform the whole SSL handshake, step by step\n",
    )
    git(repo, "commit", "-qam", "Reword a comment")
    git(repo, "checkout", "-q", "release")
    git(repo, "checkout", "-qb", "one-function")
    edit(
        ssl_tls,
        """    ret = ssl_prepare_handshake_step(ssl);
    if (ret != 0) {
        return ret;
    }
""",
        """    ret = ssl_prepare_handshake_step(ssl);
    if (ret != 0) {
        return ret;
    }
"""
        + SPIN,
    )
    git(repo, "commit", "-qam", "Handshake: spin a counter before every step")
    git(repo, "checkout", "-q", "release")
    # Two whole configs, the default and one with 4 KiB record buffers.
    default = (repo / "include" / "mbedtls" / "mbedtls_config.h").read_text()
    (work / "configs").mkdir()
    (work / "configs" / "default.h").write_text(default)
    small = default
    for direction in ("IN", "OUT"):
        small = re.sub(rf"^//#define MBEDTLS_SSL_{direction}_CONTENT_LEN\s+16384",
                       f"#define MBEDTLS_SSL_{direction}_CONTENT_LEN 4096", small,
                       flags=re.M)  # fmt: skip
    assert small.count("CONTENT_LEN 4096") == 2
    (work / "configs" / "small-records.h").write_text(small)
    return work


def table_rows(text: str) -> list[list[str]]:
    """Every row of the summary's tables that is about a point."""
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| handshake_")]  # fmt: skip


def rows(summary: str, section: str) -> list[list[str]]:
    """The table rows of one section of an ab summary (`### Regressions (n)`...)."""
    found = re.search(rf"### {section} \(\d+\)\n\n(.*?)(?:\n\n|\Z)", summary, re.S)
    if found is None:
        return []
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in found.group(1).splitlines()[2:]]  # fmt: skip


def test_ab_names_a_regressing_commit_and_fails(work: Path) -> None:
    db = work / "regression.db"
    proc = tlsbench("ab", "mbedtls@mbedtls#release", "mbedtls@mbedtls#regression",
                    "--mode", "instructions", "--repetitions", "4", "--only",
                    "scenario=handshake", "--only", "tls=1.3", "--db", str(db),
                    cwd=work)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    summary = proc.stdout
    assert summary.startswith("## tlsbench ab: regression\n")
    regressions = {(r[0], r[1]): r for r in rows(summary, "Regressions")}
    point = "handshake_1.3_rsa2048_server"
    for side in ("client", "server"):
        # Named: the figure, its kind, base and candidate, and by how much.
        instructions = regressions[(point, f"{side} instructions")]
        assert instructions[2] == "instructions" and instructions[5].startswith("+")
        peak = regressions[(point, f"{side} heap peak")]
        assert peak[2] == "heap" and peak[5].startswith("+16,384 ("), peak
        assert (point, f"{side} heap retained") not in regressions  # freed each step
    # Every figure names the code it measured: the commits, their trees, not dirty.
    commit = git(work / "mbedtls", "rev-parse", "regression")
    assert f"| candidate | `mbedtls@{work / 'mbedtls'}#regression` | git " in summary
    assert f"commit {commit[:12]}" in summary
    store = Store(db, readonly=True)
    builds = {p.variant: p.build for p in store.points(store.run("latest")["id"])}
    source = builds[f"mbedtls@{work / 'mbedtls'}#regression"]["source"]
    assert (source["kind"], source["commit"], source["dirty"]) == ("local-commit", commit, False)
    assert source["tree"] == git(work / "mbedtls", "rev-parse", "regression^{tree}")
    # The generated files a git tree lacks were generated by the build.
    generated = builds[f"mbedtls@{work / 'mbedtls'}#release"]["build_facts"]["generated_files"]
    assert "error.c" in generated and "psa_crypto_driver_wrappers.h" in generated
    report = tlsbench("report", "latest", "--db", str(db), cwd=work)
    assert f"git {work / 'mbedtls'}#regression: commit {commit[:12]}" in report.stdout
    # The same run, judged again: failing on code size only, the regressions do not fail.
    again = tlsbench("ab", "mbedtls@mbedtls#release", "mbedtls@mbedtls#regression",
                     "--run", "latest", "--db", str(db), "--fail-on", "code-size",
                     "--json", cwd=work)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["counts"]["regression"] >= 4


def test_ab_names_the_one_function_a_commit_changed(work: Path) -> None:
    """Two commits that differ in one function: every changed figure is explained by that
    function first, its counts before and after, in the JSON, the terminal's Markdown and the
    step summary."""
    db, summary = work / "one-function.db", work / "step-summary.md"
    proc = tlsbench("ab", "mbedtls@mbedtls#release", "mbedtls@mbedtls#one-function",
                    "--mode", "instructions", "--repetitions", "1", "--only",
                    "scenario=handshake", "--only", "tls=1.3", "--db", str(db), "--json",
                    "--summary", str(summary), cwd=work)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    verdicts = {v["figure"]: v for v in json.loads(proc.stdout)["verdicts"]}
    for side in ("client", "server"):
        verdict = verdicts[f"{side} instructions"]
        assert verdict["verdict"] == "regression" and verdict["side"] == side
        first = verdict["changed"]["functions"][0]
        assert (first["name"], first["label"]) == ("mbedtls_ssl_handshake_step", "tls"), first
        # 20,000 turns of a few instructions before each of the side's steps.
        assert first["change"]["instructions"] > 50_000, first
        assert first["before"]["calls"] == first["after"]["calls"] > 0
        # Nothing else moved by more than a hundredth of it.
        rest = verdict["changed"]["functions"][1:]
        assert all(abs(c["change"]["instructions"]) * 100 < first["change"]["instructions"]
                   for c in rest), rest  # fmt: skip
        assert verdict["changed"]["groups"][0]["name"] == "tls"
        assert verdicts[f"{side} heap peak"]["verdict"] == "no change"
        assert verdicts[f"{side} heap peak"]["changed"] is None
    # The same in the Markdown the terminal and a pull request's step summary show.
    text = summary.read_text()
    block = text.split("### What changed, by function", 1)[1]
    first_row = next(line for line in block.splitlines() if line.startswith("| `"))
    assert first_row.startswith("| `mbedtls_ssl_handshake_step` | tls | tlsbench-driver | ")
    again = tlsbench("ab", "mbedtls@mbedtls#release", "mbedtls@mbedtls#one-function",
                     "--run", "latest", "--db", str(db), cwd=work)  # fmt: skip
    assert again.returncode == 1 and "### What changed, by function" in again.stdout


def test_ab_passes_a_commit_that_changes_only_a_comment(work: Path) -> None:
    proc = tlsbench("ab", "mbedtls@mbedtls#release", "mbedtls@mbedtls#comment",
                    "--mode", "instructions", "--repetitions", "4", "--only",
                    "scenario=handshake", "--only", "tls=1.3", "--db",
                    str(work / "comment.db"), cwd=work)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.startswith("## tlsbench ab: no regression\n")
    assert "**0 regressions, 0 improvements," in proc.stdout
    # The heap figures of identical code are identical (the table of unchanged figures).
    unchanged = {(r[0], r[1]): r for r in table_rows(proc.stdout)}
    for side in ("client", "server"):
        peak = unchanged[("handshake_1.3_rsa2048_server", f"{side} heap peak")]
        assert peak[5] == "0" and peak[7].startswith("equal"), peak


def test_the_readmes_ab_command_runs_as_written(work: Path) -> None:
    """The README's `ab mbedtls@../mbedtls#main mbedtls@../mbedtls#HEAD --mode instructions`,
    typed in a folder beside the clone, narrowed to the TLS 1.3 handshake with `--only`
    (tests/documented_commands.py): main is the release, HEAD the comment commit (the same
    builds as the test above)."""
    (command,) = [doc for doc in documented() if doc.written.startswith("ab ")]
    _, argv = how_to_run(command.written)
    repo = work / "mbedtls"
    git(repo, "branch", "-f", "main", "release")
    git(repo, "checkout", "-q", "comment")
    beside = work / "mine"
    beside.mkdir(exist_ok=True)
    try:
        proc = tlsbench(*argv, cwd=beside)
    finally:
        git(repo, "checkout", "-q", "release")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.startswith("## tlsbench ab: no regression\n")
    assert f"`mbedtls@{repo}#HEAD`" in proc.stdout


def test_ab_of_two_config_files_gives_the_heap_verdict(work: Path) -> None:
    proc = tlsbench("ab", "mbedtls-3.6.6:config=configs/small-records.h",
                    "mbedtls-3.6.6:config=configs/default.h", "--db",
                    str(work / "configs.db"), cwd=work)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    regressions = {(r[0], r[1]): r for r in rows(proc.stdout, "Regressions")}
    for side in ("client", "server"):
        # 16 KiB record buffers in and out instead of 4 KiB: 2 x 12 KiB more, kept.
        retained = regressions[("handshake_1.3_rsa2048_server", f"{side} heap retained")]
        assert retained[2] == "heap" and retained[5].startswith("+24,576 ("), retained
    # The config files are named (path, sha256) and shown whole in the report.
    assert f"config={work / 'configs' / 'default.h'} (sha256 " in proc.stdout
    report = tlsbench("report", "latest", "--db", str(work / "configs.db"), cwd=work)
    assert "#define MBEDTLS_SSL_IN_CONTENT_LEN 4096" in report.stdout


def test_a_wolfssl_user_settings_file_builds_and_handshakes(tmp_path: Path, build_of) -> None:
    """user-settings=FILE: configure --enable-usersettings with the file as user_settings.h.
    The file here is what configure chose for the pinned build (its options.h), plus what
    --enable-usersettings asks of such a file (its small-memory curve25519 / ed25519 code)."""
    options = Path(build_of("wolfssl-5.7.2").manifest["link"]["include_dirs"][0])
    chosen = (options / "wolfssl" / "options.h").read_text()
    settings = tmp_path / "user_settings.h"
    settings.write_text(re.sub(r"#(ifndef|define|endif.*) WOLFSSL_OPTIONS_H.*\n", "", chosen)
                        + "#define CURVE25519_SMALL\n#define ED25519_SMALL\n")  # fmt: skip
    spec = f"wolfssl-5.7.2:user-settings={settings}"
    build = tlsbench("build", spec, "--json", cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    [described] = json.loads(build.stdout)
    assert described["config_files"][0]["option"] == "user-settings"
    installed = Path(described["folder"]) / "prefix" / "include"
    # The file as written, and the user_settings.h the library reads: the file, then the
    # platform's macros (recipes/wolfssl.py).
    assert (installed / wolfssl_recipe.YOUR_SETTINGS).read_text() == settings.read_text()
    wrapper = (installed / "user_settings.h").read_text()
    assert f'#include "{wolfssl_recipe.YOUR_SETTINGS}"' in wrapper
    assert "#define WOLFSSL_USER_SETTINGS" in (installed / "wolfssl" / "options.h").read_text()
    drive = tlsbench("drive", spec, "handshake", "--iterations", "2", "--json", cwd=tmp_path)
    assert drive.returncode == 0, drive.stderr[-3000:]
    negotiated = json.loads(drive.stdout)["negotiated"]
    assert (negotiated["version"], negotiated["group"]) == ("1.3", "x25519")
