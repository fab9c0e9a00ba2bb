"""The layout of the ``xrc`` command (python/xrc/cli/): a module per
subcommand imported only when it runs, and one map from exceptions to exit
statuses and messages (xrc.cli.errors)."""

from __future__ import annotations

import argparse
import errno
import importlib
import subprocess
import sys

import pytest

from xrc.cli import COMMANDS, errors
from xrc.cli.parser import build
from xrc.scenario import ScenarioError

_HEAVY = ("pandas", "matplotlib", "pyarrow", "numpy", "multiprocessing", "dask")


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["validate", "paper/fig1-time-varying"]])
def test_quick_subcommands_import_no_heavy_library_and_no_other_subcommand(argv):
    code = (f"import sys\nfrom xrc.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in sys.argv[1:] "
            "or m.startswith('xrc.cli.'))), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, *_HEAVY], capture_output=True, text=True)
    loaded = set(r.stderr.split())
    assert not {m.split(".")[0] for m in loaded} & set(_HEAVY), r.stderr
    own = {"xrc.cli.errors", "xrc.cli.parser"} | ({f"xrc.cli.{COMMANDS[argv[0]]}"} if argv[0] in COMMANDS else set())
    assert loaded == own


def test_every_subcommand_of_the_parser_has_its_module():
    (sub,) = [a for a in build()._actions if isinstance(a, argparse._SubParsersAction)]
    # `xrc fuzz` parses its own arguments (xrc.fuzz.main).
    assert set(sub.choices) - {"fuzz"} == set(COMMANDS)
    for name in COMMANDS.values():
        assert callable(importlib.import_module(f"xrc.cli.{name}").command)


def _raised_in(scope, exc):
    try:
        if scope is None:
            raise exc
        with errors.scope(scope):
            raise exc
    except BaseException as e:
        return e


def _cases():
    from xrc.emulation.testbed import TestbedError
    from xrc.kernel import KernelError
    from xrc.outdir import OutputError
    from xrc.parallel import WorkerDied

    return [
        (None, ScenarioError("flows.0.cc: no such scheme"), 2, "xrc: error: flows.0.cc: no such scheme"),
        (None, OutputError("--out 'x' exists"), 2, "xrc: error: --out 'x' exists"),
        (None, KeyboardInterrupt(), 130, "xrc: interrupted"),
        (None, WorkerDied("a worker was killed by SIGKILL"), 1, "xrc: error: a worker was killed by SIGKILL"),
        (None, FileNotFoundError(errno.ENOENT, "No such file or directory", "f.toml"), 2,
         "xrc: error: f.toml: No such file or directory"),
        ("kernel", KernelError("not root"), 2, "xrc: error: kernel: not root"),
        ("kernel", RuntimeError("bpftool failed"), 1, "xrc: error: kernel: bpftool failed"),
        ("emulate", TestbedError("no TUN"), 2, "xrc: error: no TUN"),
        ("emulate", RuntimeError("ip failed"), 1, "xrc: error: emulate: ip failed"),
        ("emulate", subprocess.CalledProcessError(1, "ip"), 1,
         "xrc: error: emulate: Command 'ip' returned non-zero exit status 1."),
        ("emulate", ScenarioError("bad"), 2, "xrc: error: bad"),
        ("validate-linux", TestbedError("no iperf3"), 2, "xrc: error: no iperf3"),
        ("validate-linux", ValueError("bad case"), 2, "xrc: error: bad case"),
        ("validate-linux", OSError("gone"), 1, "xrc: error: validate-linux: gone"),
        ("validate-linux results", ValueError("not a results file"), 2, "xrc: error: not a results file"),
        # An OSError outside the real runs: the general rule.
        ("validate-linux results", OSError(errno.EACCES, "Permission denied", "o"), 2,
         "xrc: error: o: Permission denied"),
    ]


@pytest.mark.parametrize("scope, exc, status, says", _cases(), ids=lambda x: x if isinstance(x, str) else None)
def test_each_exception_has_its_exit_status_and_message(scope, exc, status, says, capsys):
    assert errors.report(_raised_in(scope, exc)) == status
    assert capsys.readouterr().err == says + "\n"


@pytest.mark.parametrize("scope, exc", [(None, RuntimeError("a bug")), (None, ValueError("a bug")),
                                        ("emulate", ValueError("a bug")), (None, SystemExit(2))])
def test_what_no_rule_names_is_left_to_raise(scope, exc, capsys):
    # A bug prints its traceback; argparse's SystemExit goes on.
    assert errors.report(_raised_in(scope, exc)) is None
    assert capsys.readouterr().err == ""


def test_a_subcommands_scope_does_not_reach_past_it():
    # What `xrc emulate` reports as a failed run is a bug (a traceback)
    # outside its `with scope("emulate")`.
    from xrc.emulation.testbed import TestbedError

    assert errors.report(_raised_in(None, TestbedError("no TUN"))) is None
    assert errors.report(_raised_in(None, RuntimeError("x"))) is None
