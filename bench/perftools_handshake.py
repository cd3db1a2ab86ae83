"""An outside instrument for threaded handshakes: OpenSSL's own perftools `handshake` tool
(the openssl/perftools repository) against tlsbench's `handshake --threads T`, the same job
on the same builds, at each thread count. The two agree when tlsbench's threaded figures
measure the library and not the harness.

The job: full TLS 1.3 handshakes with an RSA-2048 server certificate, client and server
both in one process joined by memory buffers, T threads sharing one client and one server
context, no certificate verification. perftools is built here from a checkout the user
has (no package registry carries it): handshake.c and the perflib files it needs, as plain
C (gcc -O2) against the variant's own libraries (the static archives of a pinned build;
Debian's shared libssl and libcrypto for openssl-system), with the link facts of tlsbench's
build.
Its server certificate and key are tlsbench's RSA-2048 leaf (`servercert.pem` and
`serverkey.pem` in a temporary folder), so that both sign with the same key.

perftools' semantics (source/handshake.c): each of T threads runs handshakes for a fixed
5 seconds (RUN_TIME) on the shared contexts, each one on fresh SSL objects with memory BIOs,
reading the server's two TLS 1.3 NewSessionTickets on the client and shutting both down.
It prints "Average time per handshake: Xus" (5 s x T / all handshakes: a thread's time per
handshake) and "Handshakes per second: Y" (all handshakes / 5 s): Y is the total rate,
T x 10^6 / X. tlsbench's total rate is `summary.total_handshakes_per_s.median`: every
thread's measured handshakes over the time from the first thread's start to the last one's
end (one value per run). By default tlsbench runs as many handshakes per thread as
perftools did in the same round, so both run about 5 s.

Before timing, a probe copy of perftools (the same sources, linked with SSL_new and
SSL_shutdown wrapped) reports what its first connection negotiated: protocol, suite, group,
the key shares its client sent, the signature scheme, the server key's size, the client's
verify mode, the tickets the server sends. tlsbench is then told the same suite and group
(its defaults are TLS_AES_128_GCM_SHA256 and x25519; OpenSSL's default contexts take
TLS_AES_256_GCM_SHA384, and 3.5 negotiates X25519MLKEM768) and its negotiated parameters
are checked against the probe's. What still differs is printed under the table: perftools'
server sends two session tickets that its client reads (tlsbench's handshake scenario sends
none), and a 3.5 client with default groups sends two key shares (X25519MLKEM768 and
X25519; tlsbench offers the one group). --aligned removes both from perftools' side through
an OpenSSL config file (OPENSSL_CONF: NumTickets = 0, Groups = the negotiated group) that its
default contexts load; perftools' code is unchanged either way.

Rounds are interleaved (each round runs every variant and thread count, perftools and
tlsbench one after the other, in alternating order), each round gives one paired ratio
tlsbench / perftools, and the table gives the medians; "agree" means the median ratio is
within 10 % of 1.

Usage: .venv/bin/python bench/perftools_handshake.py --perftools DIR [--variants V,...]
           [--threads 1,2] [--rounds 3] [--count N] [--aligned]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench.builds import certs
from tlsbench.builds.build import COMPILER, Build, Builder
from tlsbench.builds.variants import Catalog
from tlsbench.core.errors import UserError
from tlsbench.driver import cpuprofile
from tlsbench.driver.drive import driver_command

VARIANTS = ["openssl-3.5.x", "openssl-system", "openssl-1.1.1w"]
SOURCES = ["handshake.c", "perflib/perfhelper.c", "perflib/perfsslhelper.c",
           "perflib/threads.c", "perflib/time.c"]  # fmt: skip
RUN_SECONDS = 5  # perftools' RUN_TIME (source/handshake.c)
AGREE = 0.10
WARMUP = 5  # tlsbench's unmeasured handshakes per thread (perftools has none)
# tlsbench's names of the groups OpenSSL may report (SSL_group_to_name, or the key's short
# name in 1.1.1), lower-cased; and of the TLS code points a key share names.
GROUPS = {"x25519": "x25519", "x25519mlkem768": "X25519MLKEM768", "secp256r1": "secp256r1",
          "prime256v1": "secp256r1", "p-256": "secp256r1", "secp384r1": "secp384r1",
          "secp521r1": "secp521r1", "x448": "x448"}  # fmt: skip
CODE_POINTS = {0x001D: "x25519", 0x11EC: "X25519MLKEM768", 0x0017: "secp256r1",
               0x0018: "secp384r1", 0x0019: "secp521r1", 0x001E: "x448"}  # fmt: skip

# Linked into the probe copy of perftools with -Wl,--wrap=SSL_new,--wrap=SSL_shutdown: it
# sees perftools' own contexts and connections. SSL_new installs a ClientHello callback
# (the key shares the client sent); perftools shuts the client down first, then the server:
# the client's view is noted, the server's added, one JSON line printed, and the process
# ends after that first connection.
PROBE_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

SSL *__real_SSL_new(SSL_CTX *ctx);
int __real_SSL_shutdown(SSL *s);

static char shares[256];
static char client[768];

static int on_hello(SSL *s, int *al, void *arg) {
  const unsigned char *p;
  size_t len, used = 0;
  (void)al; (void)arg;
  if (SSL_client_hello_get0_ext(s, 51, &p, &len) == 1 && len >= 2) {
    size_t end = 2 + (((size_t)p[0] << 8) | p[1]), off = 2;
    while (off + 4 <= end && off + 4 <= len && used + 16 < sizeof(shares)) {
      used += (size_t)snprintf(shares + used, sizeof(shares) - used, "%s%u", used ? "," : "",
                               (unsigned)((p[off] << 8) | p[off + 1]));
      off += 4 + (((size_t)p[off + 2] << 8) | p[off + 3]);
    }
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

SSL *__wrap_SSL_new(SSL_CTX *ctx) {
  SSL_CTX_set_client_hello_cb(ctx, on_hello, NULL);
  return __real_SSL_new(ctx);
}

static const char *group_of(SSL *s) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  const char *name = SSL_group_to_name(s, SSL_get_negotiated_group(s));
  return name != NULL ? name : "?";
#else
  EVP_PKEY *key = NULL;
  const char *name = "?";
  if (SSL_get_peer_tmp_key(s, &key) == 1) name = OBJ_nid2sn(EVP_PKEY_id(key));
  EVP_PKEY_free(key);
  return name;
#endif
}

int __wrap_SSL_shutdown(SSL *s) {
  if (!SSL_is_server(s)) {
    int type = NID_undef, md = NID_undef, bits = 0;
    const char *key = "?";
    X509 *cert = SSL_get_peer_certificate(s);
    if (cert != NULL) {
      EVP_PKEY *pub = X509_get0_pubkey(cert);
      bits = EVP_PKEY_bits(pub);
      key = OBJ_nid2sn(EVP_PKEY_id(pub));
      X509_free(cert);
    }
    SSL_get_peer_signature_type_nid(s, &type);
    SSL_get_peer_signature_nid(s, &md);
    snprintf(client, sizeof(client),
             "\"library\": \"%s\", \"version\": \"%s\", \"suite\": \"%s\", \"group\": \"%s\", "
             "\"signature\": \"%s\", \"hash\": \"%s\", \"key\": \"%s\", \"key_bits\": %d, "
             "\"client_verify_mode\": %d",
             OpenSSL_version(OPENSSL_VERSION), SSL_get_version(s),
             SSL_CIPHER_standard_name(SSL_get_current_cipher(s)), group_of(s),
             OBJ_nid2sn(type), OBJ_nid2sn(md), key, bits, SSL_get_verify_mode(s));
  } else {
    printf("{%s, \"key_shares\": [%s], \"server_tickets\": %d}\n", client, shares,
           (int)SSL_get_num_tickets(s));
    fflush(stdout);
    _exit(0);
  }
  return __real_SSL_shutdown(s);
}
"""


class Failure(Exception):
    """A variant that cannot be compared: the reason is printed and the run ends non-zero."""


@dataclass
class Pair:
    """One variant at one thread count: each round's figures."""

    perftools: list[float] = field(default_factory=list)  # total handshakes/s
    tlsbench: list[float] = field(default_factory=list)
    perftools_cpu: list[float] = field(default_factory=list)  # handshakes per CPU second
    tlsbench_cpu: list[float] = field(default_factory=list)
    per_thread: list[int] = field(default_factory=list)  # perftools' handshakes per thread

    def ratios(self, cpu: bool = False) -> list[float]:
        ours, theirs = (
            (self.tlsbench_cpu, self.perftools_cpu) if cpu else (self.tlsbench, self.perftools)
        )
        return sorted(t / p for t, p in zip(ours, theirs, strict=True))


@dataclass
class Subject:
    """A variant with its perftools programs and the options that make tlsbench's job the same."""

    build: Build
    handshake: Path
    facts: dict[str, Any]
    driver_args: list[str]
    negotiated: dict[str, Any] = field(default_factory=dict)


def source_folder(given: Path) -> Path:
    """The checkout's source/ folder (the repository root or source/ itself may be given)."""
    for folder in (given / "source", given):
        if all((folder / name).is_file() for name in SOURCES):
            return folder
    missing = [name for name in SOURCES if not (given / "source" / name).is_file()]
    raise SystemExit(
        f"perftools_handshake.py: {given} is not a perftools checkout (the openssl/perftools "
        f"repository): no {', '.join('source/' + m for m in missing)}"
    )


def compile_program(build: Build, src: Path, out: Path, extra: list[str]) -> None:
    """perftools' handshake against one build, with the link facts tlsbench recorded for it."""
    link = build.manifest["link"]
    command = [COMPILER, "-O2", "-Wall", "-pthread", f"-I{src}"]
    command += [f"-I{d}" for d in link["include_dirs"]] + [f"-D{d}" for d in link["defines"]]
    command += [*link["c_flags"], *(str(src / name) for name in SOURCES), *extra]
    command += [*link["libraries"], *link["link_flags"], "-pthread", "-o", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line][:6]
        raise Failure(
            f"perftools' handshake does not build against {build.variant.name} "
            f"({build.manifest['version']}):\n  "
            + "\n  ".join(errors or proc.stderr.splitlines()[-6:])
        )


def environment(aligned_conf: Path | None) -> dict[str, str]:
    env = {**os.environ, **cpuprofile.active_environment()}
    if aligned_conf is not None:
        env["OPENSSL_CONF"] = str(aligned_conf)
    return env


def probe(program: Path, cert_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([str(program), str(cert_dir), "1"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)  # fmt: skip
    try:
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError) as exc:
        raise Failure(f"the perftools probe gave no facts ({exc}): {proc.stdout[-300:]}"
                      f"{proc.stderr[-300:]}") from exc  # fmt: skip


def tlsbench_group(facts: dict[str, Any]) -> str:
    group = GROUPS.get(str(facts["group"]).lower())
    if group is None:
        raise Failure(f"perftools negotiated group {facts['group']!r}, which tlsbench cannot name")
    return group


def write_aligned_conf(folder: Path, group: str) -> Path:
    """The OpenSSL config that makes perftools' default contexts do tlsbench's job: no
    session tickets, the one group offered (so one key share). `group` as the library
    spells it (1.1.1 knows "X25519", not "x25519")."""
    conf = folder / f"aligned-{group}.cnf"
    conf.write_text(
        "openssl_conf = openssl_init\n\n[openssl_init]\nssl_conf = ssl_module\n\n"
        "[ssl_module]\nsystem_default = tls_defaults\n\n"
        f"[tls_defaults]\nNumTickets = 0\nGroups = {group}\n"
    )
    return conf


def prepare(variant: str, src: Path, work: Path, cert_dir: Path, aligned: bool) -> Subject:
    build = Builder(quiet=True).build(Catalog().resolve(variant))
    if build.variant.library != "openssl" or build.variant.arch != "x86_64":
        raise Failure(
            f"{variant}: perftools' handshake is built here for OpenSSL itself on x86_64 "
            f"only (this is {build.variant.library}, {build.variant.arch})"
        )
    handshake, probe_program = work / f"handshake-{variant}", work / f"probe-{variant}"
    compile_program(build, src, handshake, [])
    probe_c = work / "probe.c"
    probe_c.write_text(PROBE_C)
    compile_program(build, src, probe_program,
                    [str(probe_c), "-Wl,--wrap=SSL_new,--wrap=SSL_shutdown"])  # fmt: skip
    facts = probe(probe_program, cert_dir, environment(None))
    group = tlsbench_group(facts)
    conf = write_aligned_conf(work, facts["group"]) if aligned else None
    if conf is not None:
        facts = probe(probe_program, cert_dir, environment(conf))
        facts["aligned"] = True
    if (
        facts["version"] != "TLSv1.3"
        or facts["key"] != "rsaEncryption"
        or facts["key_bits"] != 2048
    ):
        raise Failure(f"{variant}: perftools' connection is not TLS 1.3 with RSA-2048: {facts}")
    if facts["client_verify_mode"] != 0:
        raise Failure(f"{variant}: perftools' client verifies the server: {facts}")
    args = ["--auth", "none", "--tls", "1.3", "--cert", "rsa2048", "--chain", "1",
            "--suite", facts["suite"], "--group", group]  # fmt: skip
    return Subject(build, handshake, facts, args)


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_perftools(
    subject: Subject, cert_dir: Path, threads: int, env: dict[str, str]
) -> tuple[float, float]:
    """perftools' total handshakes per second at `threads` (a run takes RUN_SECONDS), and
    its handshakes per CPU second of the whole process."""
    command = [str(subject.handshake), str(cert_dir), str(threads)]
    before = children_cpu()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False,
                          timeout=RUN_SECONDS * 20)  # fmt: skip
    cpu = children_cpu() - before
    per_handshake = re.search(r"Average time per handshake: ([\d.]+)us", proc.stdout)
    per_second = re.search(r"Handshakes per second: ([\d.]+)", proc.stdout)
    if proc.returncode != 0 or per_handshake is None or per_second is None:
        raise Failure(f"{' '.join(command)}: exit {proc.returncode}: {proc.stdout[-400:]}"
                      f"{proc.stderr[-400:]}")  # fmt: skip
    total = float(per_second.group(1))
    # The two lines are one count seen two ways: T x 10^6 / (a thread's time per handshake).
    implied = threads * 1e6 / float(per_handshake.group(1))
    if abs(implied / total - 1) > 0.01:
        raise Failure(f"perftools' two figures disagree ({total} /s, {implied:.1f} /s implied)")
    return total, total * RUN_SECONDS / cpu


def run_tlsbench(
    subject: Subject, threads: int, count: int, env: dict[str, str]
) -> tuple[float, float]:
    """tlsbench's total handshakes per second at `threads`, `count` measured per thread, and
    its handshakes per CPU second of the whole driver process (the warm-up handshakes and
    the first, checked connection counted in; its start-up and clock calibration too)."""
    args = [*subject.driver_args, "--threads", str(threads), "--iterations", str(count),
            "--warmup", str(WARMUP), "--json"]  # fmt: skip
    command = driver_command(subject.build, "handshake", args)
    before = children_cpu()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    cpu = children_cpu() - before
    if proc.returncode != 0:
        raise Failure(f"{' '.join(command)}: exit {proc.returncode}: {proc.stderr[-400:]}")
    out = json.loads(proc.stdout)
    subject.negotiated = out["negotiated"]
    handshakes = (count + WARMUP) * threads + 1
    return float(out["summary"]["total_handshakes_per_s"]["median"]), handshakes / cpu


def check_same_job(subject: Subject) -> None:
    """tlsbench's negotiated parameters against what the perftools probe saw."""
    facts, neg = subject.facts, subject.negotiated
    signature = (
        f"rsa_pss_rsae_{facts['hash'].lower()}" if facts["signature"] == "RSASSA-PSS" else None
    )
    wanted = {"version": "1.3", "suite": facts["suite"], "group": tlsbench_group(facts),
              "sigalg": signature, "resumed": False}  # fmt: skip
    got = {key: neg.get(key) for key in wanted}
    if got != wanted or any(neg.get("peer_verified", {}).values()):
        raise Failure(f"{subject.build.variant.name}: tlsbench negotiated {neg}, "
                      f"perftools {facts}")  # fmt: skip


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def differences(facts: dict[str, Any]) -> list[str]:
    """What perftools' side still does that tlsbench's does not."""
    notes = []
    shares = [CODE_POINTS.get(int(c), hex(int(c))) for c in facts["key_shares"]]
    if len(shares) > 1:
        notes.append(f"its client sends {len(shares)} key shares ({', '.join(shares)}), "
                     "tlsbench's one")  # fmt: skip
    if facts["server_tickets"]:
        notes.append(f"its server sends {facts['server_tickets']} session tickets per handshake "
                     "and its client reads them, tlsbench's none")  # fmt: skip
    return notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--perftools", type=Path, required=True,
                        help="a checkout of the openssl/perftools repository")  # fmt: skip
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated (default {','.join(VARIANTS)})")  # fmt: skip
    parser.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--count", type=int, default=0,
                        help="tlsbench's measured handshakes per thread and run (default: as "
                             "many as perftools did per thread in its last run, ~5 s)")  # fmt: skip
    parser.add_argument("--aligned", action="store_true",
                        help="perftools without session tickets and with the one group "
                             "offered (an OPENSSL_CONF for its default contexts)")  # fmt: skip
    opts = parser.parse_args()
    src = source_folder(opts.perftools.resolve())
    variants = [v for v in opts.variants.split(",") if v]
    thread_counts = [int(t) for t in opts.threads.split(",") if t]
    if opts.rounds < 1 or not thread_counts or min(thread_counts) < 1 or opts.count < 0:
        parser.error("--rounds and --threads must be at least 1, --count not negative")

    subjects: dict[str, Subject] = {}
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="tlsbench-perftools-") as tmp:
        work = Path(tmp)
        # perftools reads servercert.pem and serverkey.pem from the folder it is given.
        cert_dir, leaf = work / "certs", certs.cert_dir("rsa2048")
        cert_dir.mkdir()
        shutil.copyfile(leaf / "server-chain1.pem", cert_dir / "servercert.pem")
        shutil.copyfile(leaf / "server.key", cert_dir / "serverkey.pem")
        for variant in variants:
            try:
                subjects[variant] = prepare(variant, src, work, cert_dir, opts.aligned)
            except (Failure, UserError, subprocess.TimeoutExpired) as exc:
                failed[variant] = str(exc)
                print(f"perftools_handshake.py: {variant}: {exc}", file=sys.stderr, flush=True)
        if not subjects:
            print("perftools_handshake.py: no variant to compare", file=sys.stderr)
            return 1
        pairs = {(v, t): Pair() for v in subjects for t in thread_counts}
        load = [os.getloadavg()[0]]
        try:
            for round_no in range(opts.rounds):
                for (variant, threads), pair in pairs.items():
                    subject = subjects[variant]
                    conf = work / f"aligned-{subject.facts['group']}.cnf"
                    env = environment(conf if opts.aligned else None)
                    order = (
                        ["perftools", "tlsbench"]
                        if round_no % 2 == 0
                        else ["tlsbench", "perftools"]
                    )
                    for side in order:
                        if side == "perftools":
                            rate, cpu_rate = run_perftools(subject, cert_dir, threads, env)
                            pair.perftools.append(rate)
                            pair.perftools_cpu.append(cpu_rate)
                            pair.per_thread.append(round(rate * RUN_SECONDS / threads))
                        else:
                            count = opts.count or (pair.per_thread[-1] if pair.per_thread else 500)
                            env_ours = environment(None)  # the driver pins its own groups
                            rate, cpu_rate = run_tlsbench(subject, threads, count, env_ours)
                            pair.tlsbench.append(rate)
                            pair.tlsbench_cpu.append(cpu_rate)
                            check_same_job(subject)
                    print(f"perftools_handshake.py: round {round_no + 1}: {variant} T={threads}: "
                          f"perftools {pair.perftools[-1]:.0f}/s, tlsbench "
                          f"{pair.tlsbench[-1]:.0f}/s", file=sys.stderr, flush=True)  # fmt: skip
        except (Failure, subprocess.TimeoutExpired) as exc:
            print(f"perftools_handshake.py: {exc}", file=sys.stderr)
            return 1
        load.append(os.getloadavg()[0])

    print(f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; load average (1 min) "
          f"{load[0]:.1f} at the start, {load[1]:.1f} at the end.\n")  # fmt: skip
    mode = "aligned (OPENSSL_CONF: NumTickets = 0, one group)" if opts.aligned else "its defaults"
    print(f"perftools `handshake` with {mode}; {opts.rounds} interleaved rounds, medians.\n")
    print("| variant | threads | perftools handshakes/s | tlsbench handshakes/s | ratio tlsbench "
          "/ perftools (median of rounds) | ratio range | agree within 10 % | handshakes per "
          "CPU second, perftools / tlsbench | CPU ratio | CPU agree |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | --- |")
    for (variant, threads), pair in pairs.items():
        ratios, cpu_ratios = pair.ratios(), pair.ratios(cpu=True)
        ratio, cpu_ratio = statistics.median(ratios), statistics.median(cpu_ratios)
        print(f"| {variant} | {threads} | {statistics.median(pair.perftools):.0f} | "
              f"{statistics.median(pair.tlsbench):.0f} | {ratio:.3f} | {ratios[0]:.3f} - "
              f"{ratios[-1]:.3f} | {'yes' if abs(ratio - 1) <= AGREE else 'no'} | "
              f"{statistics.median(pair.perftools_cpu):.0f} / "
              f"{statistics.median(pair.tlsbench_cpu):.0f} | {cpu_ratio:.3f} | "
              f"{'yes' if abs(cpu_ratio - 1) <= AGREE else 'no'} |")  # fmt: skip
    print()
    for variant, subject in subjects.items():
        f = subject.facts
        shares = ", ".join(CODE_POINTS.get(int(c), hex(int(c))) for c in f["key_shares"])
        print(f"- {variant} ({f['library']}): perftools negotiated {f['version']} {f['suite']} "
              f"{f['group']} {f['signature']}/{f['hash']}, RSA-{f['key_bits']}, key shares "
              f"sent: {shares}; tlsbench ran `{' '.join(subject.driver_args)}`.")  # fmt: skip
        for note in differences(f):
            print(f"  - perftools differs: {note}.")
    for variant, reason in failed.items():
        print(f"- {variant}: not compared: {reason}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
