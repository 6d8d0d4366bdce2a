//! What the console says on runs against a scripted llama.cpp (captured bytes; it closes the
//! connection after every response and has no OpenAI `/tokenize`): each notice once, a
//! cancellation rate given as a fraction, and a saturation detector that never had a window.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_testkit::llamacpp::completions_response;
use servebench_testkit::script::{w, Step};

use crate::llamacpp_queue_e2e::{command, llama_server};
use crate::support::text;

/// Runs 6 requests one at a time against a llama.cpp that closes after each response; the
/// console (stdout and stderr).
fn console(extra: &[&str]) -> String {
    let server = llama_server(|_, _| vec![w(completions_response()), Step::Close]);
    let dir = tempfile::tempdir().unwrap();
    let out = command(&server, dir.path(), &["--num-prompts", "6"]).args(extra).output().unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{all}");
    all
}

#[test]
fn pooling_and_tokenize_notices_are_printed_once() {
    let all = console(&["--max-concurrency", "1"]);
    assert_eq!(all.matches("server closes connections after each response; not pooling").count(), 1, "{all}");
    assert_eq!(all.matches("tokenize endpoint unavailable").count(), 1, "{all}");
}

#[test]
fn cancellation_rate_below_one_warns_that_it_is_a_percent() {
    let all = console(&["--request-cancellation-rate", "0.5", "--request-cancellation-delay", "5"]);
    assert!(all.contains("0.5 means 0.5 % of the requests (about 1 in 200); did you mean 50?"), "{all}");
}

#[test]
fn saturation_detection_in_a_run_shorter_than_its_window_says_it_never_tested() {
    let all = console(&["--request-rate", "50", "--detect-saturation"]);
    assert!(all.contains("note: --detect-saturation never tested: the run lasted "), "{all}");
    assert!(all.contains("(--saturation-window 30 s)"), "{all}");
}
