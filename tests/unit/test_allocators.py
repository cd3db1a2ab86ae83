"""The allocator as an axis (driver/allocators.py): a point's `allocator` in its name and its
driver's environment, never in the driver's arguments, and refused up front where it cannot
apply (nginx, other hosts, a non-x86-64 build, instruction mode, not installed); `drive
--allocator` and its refusals. tests/null/test_allocator_readback.py runs the real driver on
each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake.builds import run_fake
from tlsbench import cli
from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.cli import drive as drive_verb
from tlsbench.core.errors import UserError
from tlsbench.core.points import RunPoint
from tlsbench.core.store import Store
from tlsbench.driver import allocators, drive
from tlsbench.driver.process import allocator_env
from tlsbench.run import experiments
from tlsbench.scenarios import modes

SCALING = """question = "?"
[defaults]
scenario = "scaling-resume"
threads = 2
contexts = "shared"
[[include]]
"""
LOAD = """question = "?"
[defaults]
scenario = "load"
[[include]]
"""


def load(tmp_path: Path, text: str) -> experiments.Experiment:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return experiments.load(str(path))


def test_the_command_line_and_the_module_name_the_same_allocators() -> None:
    assert drive_verb.ALLOCATORS == allocators.NAMES == ("glibc", "jemalloc", "tcmalloc",
                                                         "mimalloc")  # fmt: skip


def test_the_allocator_names_a_point_and_stays_out_of_the_drivers_arguments(
    tmp_path: Path,
) -> None:
    matrix = '[matrix]\nvariant = ["openssl-3.5.x"]\nallocator = ["glibc", "jemalloc"]\n'
    experiment = load(tmp_path, SCALING.replace("[[include]]\n", "") + matrix)
    names = [p.name for p in experiment.points]
    assert names == [
        "scaling-resume_t2_shared_alloc-glibc",
        "scaling-resume_t2_shared_alloc-jemalloc",
    ]
    point = experiment.points[1]
    assert point.options["allocator"] == "jemalloc"
    assert "--allocator" not in point.driver_args() and "jemalloc" not in point.driver_args()


def test_a_points_allocator_is_its_drivers_environment_but_not_the_heap_drivers() -> None:
    point = RunPoint("p", "null", "null", "handshake", {"allocator": "mimalloc"})
    env, refused = allocator_env(point, "time")
    assert refused is None
    assert env["TLSBENCH_ALLOCATOR"] == "libmimalloc.so.2"
    assert env["LD_PRELOAD"].endswith("/libmimalloc.so.2")
    assert allocator_env(point, "heap") == ({}, None)
    glibc = RunPoint("p", "null", "null", "handshake", {"allocator": "glibc"})
    assert allocator_env(glibc, "time") == ({"TLSBENCH_ALLOCATOR": "libc.so.6"}, None)
    assert allocators.without(env) == {}


def test_a_stray_preload_never_reaches_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    monkeypatch.setenv("TLSBENCH_ALLOCATOR", "libjemalloc.so.2")
    env = drive.driver_environment({})
    assert "LD_PRELOAD" not in env and "TLSBENCH_ALLOCATOR" not in env


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (SCALING + 'variant = "openssl-3.5.x"\nallocator = "hoard"\n', "known: glibc, jemalloc"),
        (SCALING + 'variant = "mbedtls-3.6.6:threads,armhf"\nallocator = "jemalloc"\n',
         "an x86-64 variant: the allocators are x86-64 objects"),
        (LOAD + 'variant = "openssl-system"\nserver = "nginx"\nclient = "openssl-3.5.x"\n'
         'allocator = "tcmalloc"\n', 'the variant\'s own server (server = "self")'),
        (LOAD + 'variant = "openssl-3.5.x"\nclient = "openssl-3.5.x"\nserver_host = "box"\n'
         'allocator = "jemalloc"\n', "preloaded and read back on this host only"),
    ],
)  # fmt: skip
def test_an_allocator_that_cannot_apply_is_refused_up_front(tmp_path: Path, text: str,
                                                            message: str) -> None:  # fmt: skip
    with pytest.raises(UserError) as caught:
        load(tmp_path, text)
    assert "allocator = " in str(caught.value) and message in str(caught.value), caught.value


def test_an_allocator_not_installed_names_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(allocators, "LIBRARY_DIRS", (tmp_path,))
    with pytest.raises(UserError) as caught:
        load(tmp_path, SCALING + 'variant = "openssl-3.5.x"\nallocator = "mimalloc"\n')
    assert "mimalloc is not installed (libmimalloc.so.2 of Debian's libmimalloc2.0); " \
        "`make deps` installs it" in str(caught.value)  # fmt: skip
    # glibc's malloc is always there.
    assert allocators.refusal("glibc") is None


def test_instruction_mode_keeps_glibcs_malloc() -> None:
    """Refused before anything runs (the build is a fake one: no driver starts)."""
    variant = Catalog().resolve("openssl-3.5.x")
    build = Builder().build(variant)
    point = RunPoint("p", variant.name, "openssl", "handshake", {"allocator": "jemalloc"})
    outcome = modes.run_instructions(point, build, 60)
    assert outcome.status == "unsupported"
    assert outcome.stderr_tail == f"allocator jemalloc: {allocators.VALGRIND_REFUSAL}"
    # What refuses it is instruction mode, not callgrind: the scaling report's atomics are
    # counted on the point's allocator (instruction_refusal lets it through).
    assert modes.instruction_refusal(point, variant) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--allocator", "jemalloc", "--measure", "heap", "null", "handshake"],
         "--allocator jemalloc with --measure heap: the heap driver's malloc is its own"),
        (["null", "handshake", "--measure", "heap", "--allocator", "tcmalloc"],
         "--allocator tcmalloc with --measure heap"),
        (["null", "handshake", "--allocator", "hoard"],
         "--allocator hoard: choose one of glibc, jemalloc, tcmalloc, mimalloc"),
        (["mbedtls-3.6.6:armhf", "handshake", "--allocator", "jemalloc"],
         "the allocators are x86-64 objects, and mbedtls-3.6.6:armhf is not an x86-64 build"),
    ],
)  # fmt: skip
def test_drive_refuses_an_allocator_that_cannot_apply(capsys, args: list[str],
                                                      message: str) -> None:  # fmt: skip
    assert cli.main(["drive", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_run_stores_the_allocator_with_the_run_and_every_result(tmp_path: Path) -> None:
    """On the fake driver (its callgrind run for the atomics gives nothing to read: they are
    not counted, and the point is not failed for it): the run's environment names the
    allocator and its package, and each result the package and the environment its driver
    ran in."""
    experiment = tmp_path / "alloc.toml"
    keys = 'variant = "null"\nallocator = "jemalloc"\niterations = 5\n'
    experiment.write_text(SCALING.replace("threads = 2", "threads = 1") + keys)
    db = tmp_path / "r.db"
    proc = run_fake("run", str(experiment), "--db", str(db), "--quiet", "--repetitions", "1")
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    run = store.run("latest")
    stored = json.loads(run["environment"])["allocators"]
    assert stored["jemalloc"]["package"].startswith("libjemalloc2 ")
    (point,) = store.points(int(run["id"]))
    assert point.name.endswith("_alloc-jemalloc")
    (result,) = store.results(point.id)
    output = json.loads(result["output"])
    assert output["allocator"]["name"] == "jemalloc"
    assert output["run_env"]["LD_PRELOAD"].endswith("/libjemalloc.so.2")
    assert "callgrind's output cannot be read: no totals" in output["atomics"]["not_counted"]
