"""Load and nginx interop points that cannot run are refused when the experiment is read,
before anything is built (no build, no program started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.core.errors import UserError
from tlsbench.run.experiments import load as load_experiment


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('variant = "openssl-3.5.x"\nclient = "h2load"\npattern = "new"',
         "h2load resumes the session"),
        ('variant = "openssl-system"\nserver = "nginx"\nclient = "h2load"\npattern = "resume"',
         "h2load against nginx cannot resume"),
        ('variant = "openssl-3.5.x"\nserver = "nginx"\nclient = "self"',
         'with server = "nginx", openssl-system'),
        ('variant = "openssl-system"\nserver = "nginx"\nclient = "openssl-3.5.x"\nheap = true',
         "nginx has no heap accounting"),
        ('variant = "openssl-3.5.x"\nclient = "h2load"\nauth = "mutual"',
         "no client certificate option"),
        ('variant = "openssl-3.5.x"\nclient = "h2load"\nrequest_size = 512',
         "writes its own request headers"),
        ('variant = "openssl-3.5.x"\nclient = "h2load"\nrate = 100', "no open-loop request rate"),
        ('variant = "openssl-3.5.x"\nclient = "self"\npattern = "new"\nheap = true',
         "true with keepalive only"),
        ('variant = "wolfssl-5.7.2"\nclient = "openssl-3.5.x"\npattern = "resume"\nworkers = 2',
         "its own ticket key"),
        ('variant = "openssl-3.5.x"\nclient = "self"\nrate = 0', "1..10000000"),
        ('variant = "openssl-3.5.x"\nclient = "self"\nconnections = 0', "1..10000"),
        ('variant = "openssl-3.5.x"\nclient = "self"\nduration_s = 1.5', "a whole number"),
        ('variant = "openssl-3.5.x"\nclient = "self"\npattern = "keep-alive"',
         "did you mean keepalive"),
        ('variant = "openssl-3.5.x"\nclient = "wget"', "a variant, self, or h2load"),
        ('variant = "openssl-3.5.x"', "a load point has no client"),
        ('variant = "openssl-3.5.x"\nclient = "self"\nheap = "yes"', "true or false"),
        ('variant = "openssl-system"\nserver = "nginx"\nclient = "openssl-3.5.x"\nthreads = 2',
         "its model is worker processes"),
        ('variant = "openssl-3.5.x"\nclient = "self"\nthreads = 2\nworkers = 2',
         "one model per point"),
        ('variant = "openssl-3.5.x"\nclient = "self"\nthreads = 0', "1..256"),
    ],
)  # fmt: skip
def test_a_load_point_that_cannot_run_is_refused_up_front(tmp_path: Path, lines: str,
                                                           message: str) -> None:  # fmt: skip
    experiment = tmp_path / "bad.toml"
    experiment.write_text('question = "?"\n[defaults]\nscenario = "load"\n[[include]]\n' + lines)
    with pytest.raises(UserError) as err:
        load_experiment(str(experiment))
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('variant = "openssl-system"\nserver = "nginx"\npeer = "openssl-s_server"',
         'with role = "server"'),
        ('variant = "openssl-system"\nrole = "server"\nserver = "nginx"\npeer = "openssl-3.5.x"',
         "a real client"),
        ('variant = "openssl-3.5.x"\nrole = "server"\nserver = "nginx"\npeer = "curl"',
         'with server = "nginx", openssl-system'),
    ],
)  # fmt: skip
def test_an_interop_point_served_by_nginx_is_checked_up_front(tmp_path: Path, lines: str,
                                                              message: str) -> None:  # fmt: skip
    experiment = tmp_path / "bad.toml"
    experiment.write_text('question = "?"\n[defaults]\nscenario = "interop"\n[[include]]\n' + lines)
    with pytest.raises(UserError) as err:
        load_experiment(str(experiment))
    assert message in str(err.value), str(err.value)
