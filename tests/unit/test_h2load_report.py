"""h2load's report read back (tlsbench.peers.programs): its summary parsed, and a run that
did not do what the point asked (another version, failed requests) is a failure. Pure logic:
h2load's own output as it prints it."""

import pytest

from tlsbench.peers import programs

H2LOAD_OUT = """finished in 2.00s, 11027.00 req/s, 13.28MB/s
requests: 22054 total, 22058 started, 22054 done, 22054 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 22054 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 26.56MB (27850976) total, 3.98MB (4168673) headers (space savings 0.00%), 21.54MB (22586368) data
                     min         max         mean         sd        +/- sd
time for request:       89us      6.36ms       358us       211us    96.52%
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
"""  # noqa: E501


def test_h2load_s_report_is_read_and_its_failures_fail_the_point() -> None:
    found = programs.parse_h2load(H2LOAD_OUT)
    assert found["succeeded"] == 22054 and found["wall_s"] == 2.0
    assert found["request_us"] == pytest.approx({"min": 89, "max": 6360, "mean": 358, "sd": 211})
    assert programs.h2load_problem(found, {"tls": "1.3"}, 1024, 0) is None
    assert "TLS 1.3, not 1.2" in (programs.h2load_problem(found, {"tls": "1.2"}, 1024, 0) or "")
    # h2load exits 0 when every request failed (a server that is gone): still a failure.
    dead = H2LOAD_OUT.replace(
        "22054 succeeded, 0 failed, 0 errored", "0 succeeded, 40 failed, 40 errored"
    )
    problem = programs.h2load_problem(programs.parse_h2load(dead), {}, 1024, 0)
    assert problem is not None and "40 of 22054 requests failed" in problem
