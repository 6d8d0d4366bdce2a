"""Run servebench from Python.

The product is the ``servebench`` binary this package installs (``servebench --help``). This
module finds it and runs a benchmark, returning the result JSON as a :class:`Result`::

    import servebench
    result = servebench.run(["--sim", "--num-prompts", "50", "--max-concurrency", "8"])
    print(result.completed, result.mean_ttft_ms, result["output_throughput"])

Errors of servebench (exit code not 0) raise :class:`ServebenchError` with the stable error
code (``SB301`` …; ``servebench explain CODE`` describes it), the message and the exit code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["Result", "ServebenchError", "find_binary", "run", "version"]

_BIN = "servebench.exe" if sys.platform == "win32" else "servebench"
_CODE = re.compile(r"\b(SB\d{3})\b")


def find_binary() -> str:
    """Path of the installed ``servebench`` binary (the wheel's script, else one on PATH)."""
    folders = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    try:
        folders.append(sysconfig.get_path("scripts", scheme=f"{os.name}_user"))
    except KeyError:
        pass
    folders += os.environ.get("PATH", "").split(os.pathsep)
    for folder in folders:
        path = os.path.join(folder, _BIN)
        if folder and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(
        "the servebench binary was not found next to this Python or on PATH; "
        "reinstall the package (pip install .) or put servebench on PATH"
    )


def version() -> str:
    """The binary's version (``servebench --version`` without the name)."""
    out = subprocess.run([find_binary(), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().split()[-1]


# The typed float figures of a Result, read from the keys of the same names.
_FIGURES = (
    "duration",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "mean_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
)
# Flags run() sets itself (both spellings servebench accepts).
_OWN_FLAGS = ("--result-dir", "--result_dir", "--result-filename", "--result_filename")


def _float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def _int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


class ServebenchError(RuntimeError):
    """servebench exited with a non-zero code."""

    def __init__(self, exit_code: int, code: Optional[str], message: str) -> None:
        super().__init__(f"servebench exited {exit_code}: {message}")
        self.exit_code = exit_code
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Result:
    """A run's result JSON (the keys of ``vllm bench serve`` plus servebench's own).

    The headline figures are typed attributes; every key is reachable with ``result[key]`` and
    the whole document is ``result.raw``. A figure servebench could not compute is ``None``.
    """

    completed: int
    failed: int
    num_prompts: Optional[int]
    duration: Optional[float]
    request_throughput: Optional[float]
    output_throughput: Optional[float]
    total_token_throughput: Optional[float]
    mean_ttft_ms: Optional[float]
    median_ttft_ms: Optional[float]
    p99_ttft_ms: Optional[float]
    mean_tpot_ms: Optional[float]
    mean_itl_ms: Optional[float]
    p99_itl_ms: Optional[float]
    mean_e2el_ms: Optional[float]
    path: str
    raw: Dict[str, Any] = field(repr=False)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @classmethod
    def from_file(cls, path: str) -> "Result":
        """Reads a result JSON servebench (or ``vllm bench serve``) wrote."""
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        return cls(
            completed=int(raw.get("completed") or 0),
            failed=int(raw.get("failed") or 0),
            num_prompts=_int(raw.get("num_prompts")),
            **{name: _float(raw.get(name)) for name in _FIGURES},
            path=path,
            raw=raw,
        )


def run(
    args: Sequence[str],
    *,
    result_dir: Optional[str] = None,
    env: Optional[Dict[str, str]] = None,
    echo: bool = False,
) -> Result:
    """Runs ``servebench ARGS --save-result`` and returns its result.

    ``args`` are the flags of ``vllm bench serve`` / servebench (``["--sim"]`` runs against the
    embedded simulator). The result JSON is written to ``result_dir`` (a temporary folder that is
    kept, by default); ``--result-dir`` and ``--result-filename`` are not accepted in ``args``.
    ``echo`` passes the console output through instead of capturing it.
    """
    for arg in args:
        if arg.split("=", 1)[0] in _OWN_FLAGS:
            raise ValueError(f"run() names the result file itself; use result_dir=, not {arg}")
    argv: List[str] = [find_binary(), *args]
    if not any(arg in ("--save-result", "--save_result") for arg in args):
        argv.append("--save-result")
    folder = result_dir or tempfile.mkdtemp(prefix="servebench-")
    argv += ["--result-dir", folder, "--result-filename", "result.json"]
    proc = subprocess.run(
        argv,
        env=None if env is None else {**os.environ, **env},
        stdout=None if echo else subprocess.PIPE,
        stderr=None if echo else subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        text = (proc.stderr or "").strip()
        found = _CODE.search(text)
        lines = [line for line in text.splitlines() if line.strip()]
        message = lines[-1] if lines else f"exit code {proc.returncode}"
        raise ServebenchError(proc.returncode, found.group(1) if found else None, message)
    return Result.from_file(os.path.join(folder, "result.json"))
