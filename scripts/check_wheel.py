"""Tests of the `servebench` Python module, run by scripts/check-wheel.sh inside a fresh venv
that holds only the wheel. Each check is named after what it pins; a failing one raises."""

import json
import os
import subprocess
import sys
import tempfile

import servebench

VENV = os.environ["SERVEBENCH_VENV"]


def binary_found_is_the_wheels_own():
    found = servebench.find_binary()
    assert os.path.realpath(found) == os.path.realpath(os.path.join(VENV, "bin", "servebench")), found


def version_is_the_crates():
    assert servebench.version() == os.environ["SERVEBENCH_EXPECTED_VERSION"], servebench.version()


def run_returns_the_typed_result_of_the_run():
    result = servebench.run(["--sim", "--num-prompts", "12", "--max-concurrency", "3"])
    assert result.completed == 12 and result.failed == 0, result
    assert result.num_prompts == 12 and result["num_prompts"] == 12
    assert isinstance(result.mean_ttft_ms, float) and result.mean_ttft_ms > 0, result
    assert isinstance(result.output_throughput, float) and result.output_throughput > 0, result
    assert result.raw["max_concurrency"] == 3
    assert os.path.isfile(result.path) and result.path.endswith("result.json")


def run_writes_into_the_result_dir_given():
    with tempfile.TemporaryDirectory() as folder:
        result = servebench.run(["--sim", "--num-prompts", "4"], result_dir=folder)
        assert result.path == os.path.join(folder, "result.json")
        assert result.completed == 4


def bad_input_raises_servebench_error_with_its_code():
    try:
        servebench.run(["--sim", "--num-prompts", "0"])
    except servebench.ServebenchError as err:
        assert err.code == "SB101", (err.code, err.message)
        assert err.exit_code == 2 and "--num-prompts" in err.message, err
    else:
        raise AssertionError("--num-prompts 0 did not raise")


def result_flags_in_args_are_refused():
    for flag in ("--result-dir", "--result_filename=x.json"):
        try:
            servebench.run(["--sim", flag])
        except ValueError:
            continue
        raise AssertionError(f"{flag} was accepted")


def figures_without_data_read_as_none():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "r.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"completed": 0, "failed": 3, "num_prompts": 3, "mean_ttft_ms": None}, f)
        result = servebench.Result.from_file(path)
    assert result.completed == 0 and result.failed == 3
    assert result.mean_ttft_ms is None and result.duration is None
    assert result.get("absent", "d") == "d"


def python_dash_m_runs_the_binary():
    out = subprocess.run(
        [sys.executable, "-m", "servebench", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().endswith(os.environ["SERVEBENCH_EXPECTED_VERSION"]), out.stdout


CHECKS = [
    binary_found_is_the_wheels_own,
    version_is_the_crates,
    run_returns_the_typed_result_of_the_run,
    run_writes_into_the_result_dir_given,
    bad_input_raises_servebench_error_with_its_code,
    result_flags_in_args_are_refused,
    figures_without_data_read_as_none,
    python_dash_m_runs_the_binary,
]

if __name__ == "__main__":
    for check in CHECKS:
        check()
        print(f"check_wheel: {check.__name__} ok")
