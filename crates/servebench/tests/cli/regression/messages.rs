//! Messages that must name the right fix (issue 23, item 12): each test reproduces the case and
//! pins the flag or file the one-line message names.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use servebench_testkit::script::{in_background, serve_by_request, w, Step};

use crate::support::{bin, fast_sim, text, tokenizer, SimProcess};

/// The line of stderr starting with `error[`.
fn error_line(out: &Output) -> String {
    text(&out.stderr).lines().find(|l| l.starts_with("error[")).unwrap_or_default().to_owned()
}

/// Pins the fix of a run whose requests all stalled: it used to say "raise --request-timeout"
/// although --stall-timeout fired. The failure names its flag; the fix says to raise that one.
#[test]
fn a_stall_timeout_names_stall_timeout_not_request_timeout() {
    let out = fast_sim(&["--sim-fault", "stall=1", "--sim-fault-stall-ms", "5000", "--stall-timeout", "0.2"]);
    let line = error_line(&out);
    assert!(line.starts_with("error[SB602]") && line.contains("(--stall-timeout)"), "{}", text(&out.stderr));
    assert!(!line.contains("--request-timeout"), "{line}");
}

/// Pins the message of two experiments on one command line: `--find-max-rate --slo` used to be
/// "invalid --num-runs" (a flag not given). It is SB121 naming the two flags given.
#[test]
fn two_experiments_name_the_flags_given_not_num_runs() {
    let out = fast_sim(&["--find-max-rate", "--slo", "ttft_p99:100"]);
    let line = error_line(&out);
    assert!(line.starts_with("error[SB121]: --find-max-rate cannot be combined with --slo"), "{line}");
    assert!(!line.contains("--num-runs"), "{line}");
    let out = fast_sim(&["--sweep-request-rate", "1,2", "--num-runs", "2"]);
    let line = error_line(&out);
    assert!(line.contains("--sweep-request-rate cannot be combined with --num-runs 2"), "{line}");
}

/// Runs `cmd` and waits at most `limit` (kills it then: the old behaviour would serve forever).
fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let mut child =
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Pins the message of `servebench sim` on a port in use: it used to be SB304 "check that the
/// server is running". It is SB316 saying to choose another --port, or --port 0.
#[test]
fn sim_on_a_port_in_use_says_choose_another_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out =
        output_within(bin().args(["sim", "--host", "127.0.0.1", "--port", &port]), Duration::from_secs(60));
    let line = error_line(&out);
    assert!(line.starts_with("error[SB316]") && line.contains("--port 0"), "{}", text(&out.stderr));
    assert!(!line.contains("server is running"), "{line}");
    let explain = bin().args(["explain", "SB316"]).output().unwrap();
    assert!(text(&explain.stdout).contains("--port 0"), "{}", text(&explain.stdout));
}

/// Pins `merge` given a shard's result JSON: it used to say "no shard header". It follows the
/// result's `records_file`; when that file is gone it says to pass the `.records.jsonl`.
#[test]
fn merge_given_a_result_json_follows_its_records_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let run = fast_sim(&["--num-shards", "1", "--shard-index", "0", "--save-result", "--result-dir", d]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let result = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a result JSON");
    let merged = bin().arg("merge").arg(&result).output().unwrap();
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    assert!(!text(&merged.stderr).contains("no shard header"));
    for f in std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()) {
        if f.to_string_lossy().ends_with(".records.jsonl") {
            std::fs::remove_file(f).unwrap();
        }
    }
    let gone = bin().arg("merge").arg(&result).output().unwrap();
    let line = error_line(&gone);
    assert!(line.starts_with("error[SB702]") && line.contains("pass each shard's .records.jsonl"), "{line}");
}

/// Pins the failure of a `text/event-stream` body that is not SSE at all (a JSON answer under an
/// SSE content type): it used to be "incomplete: the stream ended without [DONE]". It is a
/// protocol failure saying what the body began with, escaped.
#[test]
fn an_event_stream_that_is_not_sse_says_what_it_began_with() {
    let body = "{\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"hi\",\"index\":0}]}\n";
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let server = in_background(move || serve_by_request(move |_| vec![w(resp.clone()), Step::Close]));
    let out = bin()
        .args([
            "--base-url",
            &server.base_url(),
            "--model",
            "m",
            "--tokenizer",
            tokenizer().to_str().unwrap(),
        ])
        .args(["--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "4"])
        .args(["--skip-tokenize-verification", "--disable-tqdm"])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(line.contains("is not server-sent events"), "{}", text(&out.stderr));
    assert!(line.contains(r#"it began with "{\"id\":\"cmpl-1\""#), "{line}");
    assert!(text(&out.stdout).contains("Failed (protocol)"), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("Failed (incomplete)"));
}

/// Pins SB202 (a Hub tokenizer offline): its detail used to carry the fix again, so the line
/// said it twice and ran to 500 characters. One line, the fix once.
#[test]
fn an_offline_hub_tokenizer_names_its_fix_once() {
    let out = bin()
        .args(["--sim", "--tokenizer", "no-such-org/no-such-model", "--num-prompts", "2"])
        .output()
        .unwrap();
    let line = error_line(&out);
    assert!(line.starts_with("error[SB202]"), "{}", text(&out.stderr));
    assert_eq!(line.matches("fix:").count(), 1, "{line}");
    assert_eq!(line.matches("--tokenizer /path/to/tokenizer.json").count(), 1, "{line}");
    assert!(line.len() < 400, "{} characters: {line}", line.len());
}

/// Pins SB100: what the parser cannot read at all (an unknown flag, a value of the wrong type,
/// a port out of range) used to be clap's bare, uncoded error; it is one coded line whose fix
/// is clap's tip (the closest flag) or `--help`.
#[test]
fn what_the_parser_cannot_read_is_sb100_with_a_fix() {
    let cases: &[(&[&str], &str)] = &[
        (&["--num-prompts", "abc"], "'abc'"),
        (&["--no-such-flag"], "'--no-such-flag'"),
        (&["--num-promts", "3"], "--num-prompts"),
        (&["sim", "--port", "70000"], "70000"),
        (&["--num-prompts"], "--num-prompts"),
    ];
    for (args, detail) in cases {
        let out = bin().args(*args).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error[SB100]: "), "{args:?}: {stderr}");
        assert!(stderr.contains(detail) && stderr.contains("; fix: "), "{args:?}: {stderr}");
        assert!(stderr.contains("(see `servebench explain SB100`)"), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    let explain = bin().args(["explain", "SB100"]).output().unwrap();
    assert!(text(&explain.stdout).contains("Fix:"), "{}", text(&explain.stdout));
}

/// Pins argparse's rule for a flag given twice: the last value counts (`vllm bench serve
/// $COMMON --num-prompts 3` used to be refused with "cannot be used multiple times"); flags that
/// collect a list keep every value.
#[test]
fn a_flag_given_twice_keeps_its_last_value_and_list_flags_keep_every_value() {
    let out = bin()
        .args(["config", "show", "--num-prompts", "2", "--num-prompts", "3", "--seed", "1", "--seed", "9"])
        .args(["--metadata", "a=1", "--metadata", "b=2"])
        .output()
        .unwrap();
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(shown.contains("num-prompts = 3") && shown.contains("seed = 9"), "{shown}");
    assert!(shown.contains("\"a=1\"") && shown.contains("\"b=2\""), "{shown}");
}

/// Pins the messages of values out of range: `--request-timeout inf` said "inf is not a positive
/// number of seconds" and `--goodput ttft:inf` "must be >= 0" — both false. They now say what
/// the limit is and how to get what was meant.
#[test]
fn unbounded_timeouts_and_slos_say_what_to_pass_instead() {
    let out = fast_sim(&["--request-timeout", "inf"]);
    let line = error_line(&out);
    assert!(line.contains("inf seconds is more than the longest time servebench waits (1e9 s"), "{line}");
    assert!(line.contains("leave --request-timeout out for its default"), "{line}");
    let out = fast_sim(&["--stall-timeout", "1e30"]);
    assert!(error_line(&out).contains("--stall-timeout"), "{}", error_line(&out));
    let out = fast_sim(&["--goodput", "ttft:inf"]);
    let line = error_line(&out);
    assert!(
        line.contains("an unbounded SLO bounds nothing") && line.contains("leave ttft out of --goodput"),
        "{line}"
    );
}

/// Pins an absolute `--endpoint` on the base URL's origin being requested as written, as
/// docs/backends.md says: the parser refused every URL as "not a path". Another origin is SB101
/// naming both.
#[test]
fn an_absolute_endpoint_on_the_base_urls_origin_is_requested_as_written() {
    let tok = tokenizer();
    let sim = SimProcess::start(&[
        "--sim-ttft-ms",
        "2",
        "--sim-itl-ms",
        "1",
        "--sim-tokenizer",
        tok.to_str().unwrap(),
    ]);
    let run = |endpoint: &str| {
        bin()
            .args([
                "--base-url",
                &format!("{}/v1", sim.url),
                "--endpoint",
                endpoint,
                "--model",
                "servebench-sim",
            ])
            .arg("--tokenizer")
            .arg(&tok)
            .args(["--num-prompts", "2", "--disable-tqdm"])
            .output()
            .unwrap()
    };
    let out = run(&format!("{}/v1/completions", sim.url));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Successful requests:                     2"),
        "{}",
        text(&out.stdout)
    );
    let line = error_line(&run("http://127.0.0.2:9/v1/completions"));
    assert!(line.starts_with("error[SB101]") && line.contains("another origin"), "{line}");
}

/// Pins `report` refusing to overwrite its input or its other output (SB120, as a run does):
/// `report r.records.jsonl -o r.records.jsonl` replaced the records with the page, and `-o X
/// --csv X` kept only the page.
#[test]
fn report_outputs_overwrite_no_input_and_not_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.records.jsonl");
    servebench_testkit::records::write_streamed_jsonl(&rec, 3);
    let before = std::fs::read(&rec).unwrap();
    let same = dir.path().join("same.out");
    for extra in [
        vec!["-o", rec.to_str().unwrap()],
        vec!["-o", same.to_str().unwrap(), "--csv", same.to_str().unwrap()],
    ] {
        let out = bin().arg("report").arg(&rec).args(&extra).output().unwrap();
        let line = error_line(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", text(&out.stderr));
        assert!(line.starts_with("error[SB120]"), "{extra:?}: {line}");
    }
    assert_eq!(std::fs::read(&rec).unwrap(), before);
    assert!(!same.exists());
}

/// Pins a prefill cap smaller than the number of shards being refused, as `--max-concurrency`
/// is: each shard's share was rounded up to 1, so 4 shards of `--max-prefill-concurrency 2`
/// could prefill 4 requests at once.
#[test]
fn a_prefill_cap_below_the_number_of_shards_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("r.jsonl");
    let out = fast_sim(&[
        "--num-shards",
        "4",
        "--shard-index",
        "0",
        "--max-prefill-concurrency",
        "2",
        "--records",
        records.to_str().unwrap(),
    ]);
    let line = error_line(&out);
    assert!(
        line.starts_with("error[SB101]: invalid --max-prefill-concurrency: 2 is the total over 4 shards"),
        "{line}"
    );
}
