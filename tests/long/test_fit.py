"""`tlsbench fit`: every figure is a measured part (real builds, real firmware runs under
QEMU), and the verdict is their arithmetic; the Pareto front and the smallest fitting record
buffer are pure logic over figures, tested with figures made up for the purpose."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.builds import arches, firmware
from tlsbench.embedded import parts, qemu

KIB = 1024

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m4")),
    reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
)


def sections(image: Path) -> dict[str, int]:
    """Section sizes as `size -A` prints them, read here independently of cortexm."""
    out = subprocess.run(["arm-none-eabi-size", "-A", str(image)], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    found = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit():
            found[fields[0]] = int(fields[1])
    return found


def test_fit_figures_are_the_sum_of_the_measured_parts(tmp_path, build_of) -> None:
    """Each candidate's RAM is heap + stack + .data + .bss and its flash .text + .data + the
    job's credentials, where each part is what an independent run of the same image and
    `size -A` of its client-only image say; time is the cycle model's cycles of the client's
    handshake calls at the default part's clock; the verdict and margins follow from the
    budget."""
    build = build_of("wolfssl-5.7.2:cortex-m4")
    plot = tmp_path / "fit.png"
    done = tlsbench("fit", "--ram", "64K", "--flash", "512K", "--core", "m4", "--kx", "psk",
                    "--line", "wolfssl-5.7.2", "--config", "default", "--records", "512",
                    "--records", "16384", "--json", "--quiet", "--plot", str(plot))  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    core = firmware.core_of("cortex-m4")
    setting = parts.setting(None, core="cortex-m4")  # the M4's default part: STM32F401
    assert setting is not None
    assert answer["budget"] == {"core": "cortex-m4", "ram": 64 * KIB, "flash": 512 * KIB,
                                "mhz": 84.0,
                                "projection": qemu.model_projection(core, setting)}  # fmt: skip
    assert answer["budget"]["projection"]["error"]["points"] == 4
    rows = answer["candidates"]
    assert [(r["variant"], r["record"]) for r in rows] == [
        ("wolfssl-5.7.2:cortex-m4", 512), ("wolfssl-5.7.2:cortex-m4", 16384)]  # fmt: skip
    size = sections(build.program("client.elf"))
    for row in rows:
        assert row["status"] == "ok", row
        job = firmware.make_job("TLS-AES-128-GCM-SHA256", tls="1.3", kx="psk", record=row["record"])
        direct = qemu.run(qemu.image_of(build), job, timeout=120)
        world, client = direct["global"], direct["client"]
        ram, flash = row["ram"], row["flash"]
        assert ram["heap"] == max(world["heap_peak"], world["heap_live"] + client["heap_peak"])
        assert ram["stack"] == max(world["stack_high_water"], client["stack_high_water"])
        assert (ram["data"], ram["bss"]) == (size[".data"], size[".bss"])
        assert ram["total"] == ram["heap"] + ram["stack"] + ram["data"] + ram["bss"]
        assert flash["text"] == size[".vectors"] + size[".text"] + size.get(".ARM.exidx", 0)
        assert flash["credentials"] == len(firmware.TEST_PSK) + len(firmware.TEST_PSK_IDENTITY) + 1
        assert flash["total"] == flash["text"] + flash["data"] + flash["credentials"]
        assert row["instructions"] == client["handshake_instructions"]
        modelled = qemu.run(qemu.image_of(build), job, timeout=120, setting=setting)["client"]
        assert row["cycles"] == modelled["model"]["estimate"] > row["instructions"]
        assert row["ms"] == pytest.approx(modelled["projected_ms"])
        assert row["ms"][0] == pytest.approx(modelled["model"]["cycles"] / (84.0 * 1000))
        assert row["ram_margin"] == 64 * KIB - ram["total"]
        assert row["flash_margin"] == 512 * KIB - flash["total"]
        assert row["fits"] == (row["ram_margin"] >= 0 and row["flash_margin"] >= 0)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The same candidates again: read back from beside the image, not run again.
    results = list((build.drivers_folder / "results").glob("*.json"))
    assert results
    again = tlsbench("fit", "--ram", "64K", "--flash", "512K", "--core", "m4", "--kx", "psk",
                     "--line", "wolfssl-5.7.2", "--config", "default", "--records", "512",
                     "--records", "16384", "--json", "--quiet", "--plot", "none")  # fmt: skip
    assert json.loads(again.stdout)["candidates"] == rows


def test_fit_on_a_16k_m0_says_why_nothing_fits(build_of) -> None:
    """A 16 KiB M0 (the micro:bit's RAM): with 16 KiB record buffers a TLS client cannot fit,
    and the answer says so from the measured parts, not an estimate; the time is the cycle
    model's for the M0's default part (the STM32F091 at 48 MHz)."""
    build_of("mbedtls-3.6.6:cortex-m0")
    done = tlsbench("fit", "--ram", "16K", "--flash", "256K", "--core", "m0", "--kx", "psk",
                    "--line", "mbedtls-3.6.6", "--config", "default", "--records", "16384",
                    "--quiet", "--plot", "none")  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = done.stdout
    budget = "Budget: Cortex-M0: RAM 16.0 KiB, flash 256.0 KiB, 48 MHz (client; ms = the cycle"
    assert budget in text
    assert "Time: cycle model of the Cortex-M0 (m0) and STM32F091 at 48 MHz" in text
    assert "Nothing fits. The closest is mbedtls-3.6.6 default with 16384-byte records: RAM" in text
    assert "over the 16.0 KiB budget" in text and "Smallest record buffer that fits" in text


def test_fit_answers_for_an_ml_dsa_44_client_on_a_64k_part(build_of) -> None:
    """`fit --sig ml-dsa-44`: the line whose firmware has ML-DSA-44 (wolfSSL 5.9 with its
    small-memory code) measured against 64 KiB of RAM and 256 KiB of flash, the others named
    with the reason; the verdict is the arithmetic of the measured parts either way."""
    build_of("wolfssl-5.9.2:cortex-m4,ml-dsa-small")
    done = tlsbench("fit", "--ram", "64K", "--flash", "256K", "--core", "m4", "--sig",
                    "ml-dsa-44", "--records", "16384", "--quiet", "--plot", "none",
                    "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    rows = {r["configuration"]: r for r in answer["candidates"]}
    assert set(rows) == {"ml-dsa-small", "small,ml-dsa-small"}
    for row in rows.values():
        assert (row["library"], row["status"]) == ("wolfssl-5.9.2", "ok"), row
        fits = row["ram"]["total"] <= 64 * KIB and row["flash"]["total"] <= 256 * KIB
        assert row["fits"] == fits
        assert row["ram"]["heap"] > 29 * KIB  # ML-DSA-44's verification buffer, at least
    # The device build leaves out what the job does not use: less flash.
    assert rows["small,ml-dsa-small"]["flash"]["total"] < rows["ml-dsa-small"]["flash"]["total"]
    assert any("mbedtls-3.6.6: no ML-DSA" in note for note in answer["notes"])
    assert any("wolfssl-5.7.2: its ML-DSA is FIPS 204's draft" in n for n in answer["notes"])


def test_fit_refuses_what_it_cannot_answer_before_building(tmp_path) -> None:
    cache = tmp_path / "cache"
    for args, message in [
        (["--core", "m5"], "--core m5"),
        (["--ram", "lots"], "--ram lots"),
        (["--auth", "mutual"], "--auth mutual"),
        (["--records", "100"], "--records 100"),
        (["--tls", "1.3", "--kx", "rsa"], "static RSA is TLS 1.2 only"),
        (["--config", "tiny"], "--config tiny"),
        (["--line", "openssl-3.5.x"], "--line openssl-3.5.x"),
        (["--sig", "ml-dsa-44", "--tls", "1.2"], "signs in TLS 1.3 only"),
        (["--sig", "ml-dsa-44", "--cert", "ecdsa-p256"], "give one"),
        (["--sig", "ml-dsa-87"], "--sig: invalid choice: 'ml-dsa-87'"),
    ]:
        base = {"--ram": "64K", "--flash": "256K", "--core": "m4"}
        for i in range(0, len(args), 2):
            base[args[i]] = args[i + 1]
        rest = [a for k, v in base.items() for a in (k, v)]
        done = tlsbench("fit", *rest, "--plot", "none", cache=cache)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr
    assert not (cache / "builds").exists()


# -- pure logic over made-up figures ------------------------------------------------------
