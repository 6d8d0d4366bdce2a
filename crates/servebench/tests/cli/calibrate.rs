//! `servebench calibrate` end to end: a tiny ladder against its own simulator process, checking
//! the table and JSON shape (no accuracy thresholds: the host may be busy).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::bin;

#[test]
fn calibrate_prints_a_table_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cal.json");
    let tok = servebench_testkit::fixtures::smollm2_tokenizer();
    let out = bin()
        .args(["calibrate", "--levels", "1,4", "--requests", "6", "--output-len", "8"])
        .args(["--ttft-ms", "5", "--itl-ms", "2", "--tokenizer", tok.to_str().unwrap()])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("TTFT mean") && stdout.contains("µs/event"), "{stdout}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.trim_start().starts_with(['1', '4'])).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["truth"]["e2el_ms"], 5.0 + 7.0 * 2.0);
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    for (l, c) in levels.iter().zip([1, 4]) {
        assert_eq!(l["concurrency"], c);
        assert_eq!(l["completed"], 6);
        // Compared with the simulator's ground-truth log, request by request.
        let t = &l["truth"];
        assert_eq!(t["matched"], 6, "{l}");
        assert_eq!(t["itl_gaps"], 6 * 7, "{l}");
        for k in
            ["ttft_mean_err_ms", "ttft_p99_err_ms", "itl_mean_err_ms", "itl_p99_err_ms", "e2el_mean_err_ms"]
        {
            assert!(t[k].is_f64(), "{k}: {l}");
        }
        // The truth is what the simulator did: close to its nominal timing.
        assert!(t["truth_itl_mean_ms"].as_f64().unwrap() > 1.0, "{l}");
        assert!(l["ttft_mean_vs_nominal_ms"].is_f64(), "{l}");
        assert!(l["client_cpu_s"].as_f64().unwrap() > 0.0);
        assert!(l["peak_rss_mib"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn calibrate_rejects_bad_levels() {
    let out = bin().args(["calibrate", "--levels", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A `--sim-exe` that exits at once is SB101 naming the flag, its exit status and that it
/// printed nothing (it was an uncoded "the simulator did not start: " with an empty reason).
#[test]
fn a_sim_exe_that_exits_at_once_is_named_with_its_status() {
    let out = bin().args(["calibrate", "--levels", "1", "--sim-exe", "/bin/false"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("SB101") && stderr.contains("--sim-exe"), "{stderr}");
    assert!(stderr.contains("exit status: 1") && stderr.contains("printed nothing"), "{stderr}");
}

/// A `--json` path that cannot be written is refused before the calibration runs (it was
/// found only after every level had run, and lost the calibration).
#[test]
fn an_unwritable_json_path_is_refused_before_calibrating() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("cal.json");
    for path in [missing.as_path(), dir.path()] {
        let out = bin().args(["calibrate", "--levels", "1", "--json"]).arg(path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("SB101") && stderr.contains("--json"), "{stderr}");
        assert!(!stderr.contains("simulator at"), "the calibration started: {stderr}");
    }
}

/// A `--sim-exe` or `--client-exe` that is a file but cannot be run (no execute permission) is
/// SB101 naming the flag and the OS error (it was an uncoded "starting `servebench sim`").
#[test]
fn an_exe_that_cannot_be_run_is_named_with_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("not-a-program");
    std::fs::write(&data, "plain text\n").unwrap();
    let out = bin().args(["calibrate", "--levels", "1", "--sim-exe"]).arg(&data).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("SB101") && stderr.contains("--sim-exe") && stderr.contains("cannot be run"),
        "{stderr}"
    );
}

/// `--sim-exe NAME` of a file in the working directory said "cannot be run: No such file or
/// directory": a name without a slash was looked up on PATH. The file checked is the one run.
#[test]
fn a_sim_exe_named_without_a_directory_is_the_file_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    executable_script(dir.path(), "exit3.sh", "exit 3");
    let out = bin()
        .current_dir(dir.path())
        .args(["calibrate", "--levels", "1", "--sim-exe", "exit3.sh"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("exit status: 3"), "the script ran: {stderr}");
}

/// Pins a `--client-exe` that exits 0 without writing its result: the error names the client
/// and what it printed (it was an SB501 "level-1.json: No such file or directory").
#[test]
fn a_client_that_writes_no_result_is_named_with_what_it_said() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        executable_script(dir.path(), "quiet-client.sh", "echo 'boom: not a benchmark client' >&2\nexit 0");
    let tok = servebench_testkit::fixtures::smollm2_tokenizer();
    let out = bin()
        .args(["calibrate", "--levels", "1", "--requests", "2", "--output-len", "2", "--tokenizer"])
        .arg(&tok)
        .arg("--client-exe")
        .arg(&script)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("exited successfully at concurrency 1 but wrote no result file"), "{stderr}");
    assert!(
        stderr.contains("quiet-client.sh") && stderr.contains("boom: not a benchmark client"),
        "{stderr}"
    );
}

/// A `/bin/sh` script `name` in `dir` running `body`, executable.
fn executable_script(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
    let script = dir.join(name);
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    script
}
