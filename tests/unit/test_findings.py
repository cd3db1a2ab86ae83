"""The registry of known interop findings (findings/findings.toml) and how the report uses it.

Every entry is exercised with the real libraries: its reproduction (the libraries' own
programs, no tlsbench driver) must still print what it expects, and its interop point must
still fail the way its `error` says. A finding that stops reproducing fails here, so that a
stale entry is noticed rather than left explaining failures it no longer causes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.peers import findings
from tlsbench.report import load_run
from tlsbench.reportkit.contents import views

REGISTRY = findings.load()
WOLFSSL_NONCE = next(f for f in REGISTRY if f.id == "wolfssl-ticket-nonce")
NONCE_FAILURE = ("server (mbedtls-3.6.6) failed at write: mbedtls_ssl_write: NET - Sending "
                 "information through the socket failed (-0x004e); client (wolfssl-5.7.2) "
                 "failed at read: read: The security parameter is invalid (-425)")  # fmt: skip


def test_a_finding_explains_only_its_pair_its_condition_and_its_failure() -> None:
    f = WOLFSSL_NONCE
    on = {"peer": "mbedtls-3.6.6", "tls": "1.3", "resume": "on", "cert": "ecdsa-p256"}
    assert f.explains("wolfssl-5.7.2", "mbedtls-3.6.6", on, NONCE_FAILURE)
    # TLS 1.3 when the point leaves `tls` out: the driver's default.
    assert f.explains("wolfssl-5.7.2", "mbedtls-3.6.6", {"resume": "on"}, NONCE_FAILURE)
    assert not f.explains("mbedtls-3.6.6", "wolfssl-5.7.2", on, NONCE_FAILURE)  # other roles
    assert not f.explains("wolfssl-5.7.2", "mbedtls-3.6.6", {**on, "resume": "off"},
                          NONCE_FAILURE)  # fmt: skip
    assert not f.explains("wolfssl-5.7.2", "mbedtls-3.6.6", {"tls": "1.3"}, NONCE_FAILURE)
    other = "client (wolfssl-5.7.2) failed at handshake: a timeout"
    assert not f.explains("wolfssl-5.7.2", "mbedtls-3.6.6", on, other)
    assert findings.explain(REGISTRY, "wolfssl-5.7.2", "mbedtls-3.6.6", on, other) is None


def _store_with_failures(path: Path, cells: list[tuple[str, dict[str, Any], str]]) -> Store:
    """A run of interop points that failed with the given messages (report logic only: no
    driver runs here)."""
    store = Store(path)
    run_id = store.new_run("interop", "", "time", 1, {}, "", "unknown")
    store.add_points(run_id, [
        {"name": f"interop_{i}", "variant": variant, "library": variant.split("-")[0],
         "scenario": "interop", "params": params, "build": {}}
        for i, (variant, params, _) in enumerate(cells)
    ])  # fmt: skip
    for point, (_, _, message) in zip(store.points(run_id), cells, strict=True):
        output = {"exit": 5, "error": {"stage": "interop", "message": message}}
        store.add_result(point.id, 1, "failed", 5, None, 1.0, "2025-01-01T00:00:00+00:00",
                         output, "")  # fmt: skip
    store.finish_run(run_id, "failed")
    return store


def test_the_report_labels_each_failed_cell_finding_or_unexplained(tmp_path: Path) -> None:
    resumed = {"peer": "mbedtls-3.6.6", "tls": "1.3", "resume": "on"}
    store = _store_with_failures(tmp_path / "r.db", [
        ("wolfssl-5.7.2", resumed, NONCE_FAILURE),
        ("wolfssl-5.7.2", {**resumed, "cert": "ecdsa-p256"}, "client (wolfssl-5.7.2) failed at "
         "handshake: the peer sent nothing for 10 s (--peer-timeout)"),
    ])  # fmt: skip
    model = load_run(store)
    [explained] = [r for r in model.interop if r.detail == NONCE_FAILURE]
    [unexplained] = [r for r in model.interop if r.detail != NONCE_FAILURE]
    assert explained.finding == WOLFSSL_NONCE.id
    assert explained.verdict == f"finding {WOLFSSL_NONCE.id}: {WOLFSSL_NONCE.title}"
    assert explained.reproduce == WOLFSSL_NONCE.reproduce
    assert unexplained.finding == "" and unexplained.reproduce == ""
    assert unexplained.verdict == "unexplained: harness fault until shown otherwise"
    shown = views(model)
    marks = [cell for v in shown if v.name == "interop_matrix" for row in v.rows
             for cell in row[1:] if cell]  # fmt: skip
    assert sorted(marks) == ["✗ finding", "✗ unexplained"]
    [table] = [v for v in shown if v.name == "interop_failures"]
    failures = {row[5]: row for row in table.rows}  # by failure message
    assert failures[NONCE_FAILURE][3:5] == [explained.verdict, WOLFSSL_NONCE.reproduce]
    assert failures[unexplained.detail][3:5] == [unexplained.verdict, "-"]
    # In HTML the two kinds of failed cell are coloured apart.
    out = tmp_path / "html" / "report.html"
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "report", "--db", str(store.path),
                           "--format", "html", "--out", str(out)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert 'class="result-finding"' in html and 'class="result-failed"' in html


# ------------------------------------------------------------------------- the registry


BAD_REGISTRIES = [
    ("[[finding]]\nid = 'x'\n", r"finding 1: missing title, client, server, error, cause"),
    ("[[finding]]\n" + "".join(f"{k} = 'x'\n" for k in findings.REQUIRED) + "colour = 'red'\n",
     r"finding 1: unknown key\(s\) colour"),
    ("[[finding]]\n" + "".join(f"{k} = 'x'\n" for k in findings.REQUIRED if k != "error")
     + "error = '(unclosed'\n", r"\('x'\): `error` is not a regular expression"),
    ("[[finding]]\n" + "".join(f"{k} = 'x'\n" for k in findings.REQUIRED) + "when = 3\n",
     r"`when` must be a table of strings"),
    ("[[finding]]\n" + "".join(f"{k} = 'x'\n" for k in findings.REQUIRED)
     + "[[finding]]\n" + "".join(f"{k} = 'x'\n" for k in findings.REQUIRED),
     r"two findings have the id 'x'"),
    ("[finding\n", r"not valid TOML"),
    ("[findings]\n", r"unknown table\(s\) findings: only \[\[finding\]\] entries"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD_REGISTRIES)
def test_a_malformed_registry_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "findings.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message) as raised:
        findings.load(path)
    assert raised.value.exit_code == 2 and str(path) in str(raised.value)


def test_every_entry_names_a_pair_the_interop_runner_knows() -> None:
    from tlsbench.builds.variants import Catalog
    from tlsbench.peers import programs

    catalog = Catalog()
    for f in REGISTRY:
        for name in (f.client, f.server):
            if not programs.is_program(name):
                catalog.resolve(name)  # a UserError for an unknown variant
        assert f.expect, f.id  # a reproduction that checks nothing would always "reproduce"
