"""``python -m fattorus.precompile`` (``make precompile``, the first step of ``make test``) compiles every numba kernel of the
package, so that no user's first run, and no test worker, compiles one."""

from __future__ import annotations

import importlib
from pathlib import Path

import numba
from numba.core.dispatcher import Dispatcher

import fattorus
from fattorus import precompile

PACKAGE = Path(fattorus.__file__).resolve().parent


def _kernels() -> dict[str, Dispatcher]:
    """Every numba dispatcher defined in the package, by ``module.name``: each module whose
    source mentions numba is imported and its module-level dispatchers taken."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "numba" not in path.read_text():
            continue
        name = ".".join(("fattorus",) + path.relative_to(PACKAGE).with_suffix("").parts)
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == name:
                out[f"{name}.{attr}"] = value
    return out


def _covered(kernels: dict[str, Dispatcher]) -> set[str]:
    """Kernels compiled in this process (a signature, compiled or loaded from the cache) and,
    transitively, the kernels they call: a caller loaded from its cache carries its callees'
    code (which were compiled, and cached, when it was), so they need no call of their own.
    Callees are read off the names each kernel's code refers to."""
    by_function = {id(d): key for key, d in kernels.items()}
    todo = [key for key, d in kernels.items() if d.signatures]
    seen = set(todo)
    while todo:
        d = kernels[todo.pop()]
        for ref in d.py_func.__code__.co_names:
            callee = d.py_func.__globals__.get(ref)
            key = by_function.get(id(callee))
            if key is not None and key not in seen:
                seen.add(key)
                todo.append(key)
    return seen


def test_every_kernel_of_the_package_is_compiled_by_precompile():
    kernels = _kernels()
    # The modules the package compiles with numba today: a walk that found none would pass
    # the check below for nothing.
    modules = {key.rsplit(".", 1)[0] for key in kernels}
    assert {"fattorus.kernels.maxmin_compiled", "fattorus.sched.policy.torus.prism_compiled",
            "fattorus.topology.dragonfly_pairs"} <= modules, modules
    lines = []
    precompile.run(lines.append)  # in this process: its kernels' signatures are read below
    assert len(lines) == len(precompile.STEPS) == len(precompile.COST_S)
    missing = sorted(set(kernels) - _covered(kernels))
    assert not missing, f"kernels precompile does not reach (add a step that calls them): {missing}"
    assert all(d._cache is not None and type(d._cache).__name__ != "NullCache" for d in kernels.values()), \
        "a kernel without cache=True is compiled again in every process"


def test_the_coverage_check_sees_a_kernel_nothing_calls():
    """The check above can fail: a kernel defined but called by no step is reported."""
    kernels = _kernels()

    @numba.njit(cache=False)
    def orphan(x):  # pragma: no cover - never called
        return x + 1

    kernels["fattorus.orphan"] = orphan
    assert "fattorus.orphan" not in _covered(kernels)


def test_bad_arguments_are_one_line():
    import subprocess
    import sys

    for args, word in ((["--jobs", "0"], "--jobs"), (["--jobs", "two"], "--jobs"), (["--bogus"], "--bogus")):
        out = subprocess.run([sys.executable, "-m", "fattorus.precompile", *args], capture_output=True, text=True,
                             timeout=120, cwd=PACKAGE.parent)
        assert out.returncode == 2 and out.stdout == "", (args, out)
        assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("fattorus.precompile: error:"), out.stderr
        assert word in out.stderr


def test_ctrl_c_stops_every_step_at_once(tmp_path):
    """A Ctrl-C while the kernels compile (an empty cache: the steps take a minute): one line,
    exit 130, and the child processes compiling the other steps are gone with it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}  # cold: nothing loads from a cache
    proc = subprocess.Popen([sys.executable, "-m", "fattorus.precompile", "--jobs", "2"], cwd=PACKAGE.parent, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("fattorus.precompile: compiling")
    time.sleep(1.0)  # the children started
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.splitlines() == ["fattorus.precompile: interrupted"], err
    assert "done in" not in out
    assert _children_compiling() == []  # no child left compiling


def _children_compiling() -> list[str]:
    """Command lines of running ``fattorus.precompile --steps`` children (read from /proc: no
    pgrep needed on the machine)."""
    from pathlib import Path

    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        if b"fattorus.precompile" in args and b"--steps" in args:
            found.append(b" ".join(args).decode(errors="replace"))
    return found
