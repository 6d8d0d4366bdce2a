//! Regression tests of the binary: each pins a bug that was fixed and is named after the
//! behaviour it pins; its doc comment says what used to go wrong.

use crate::modes_e2e::sim;
use crate::support::text;

/// Pins the readiness wait: its doubling pause used to stop after 1.4 s of a 2 s
/// `--ready-check-timeout-sec`. Every request answers 503: the check retries until the
/// deadline and says how long it waited.
#[test]
fn ready_check_timeout_is_waited_in_full_not_cut_short_by_the_doubling_pause() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--sim-fault", "http_503=1", "--ready-check-timeout-sec", "2"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let secs: f64 =
        err.split("endpoint not ready after ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 2.0, "{err}");
}

mod messages;
mod server_text;
