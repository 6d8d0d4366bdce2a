//! End-to-end: the report opened in headless Chromium. The DOM after the inline script ran must
//! hold every chart's SVG and the script's success mark; a screenshot is taken too.
//!
//! Chromium is required (`apt-get install -y chromium`; `servebench_testkit::browser`): the test
//! fails when it is missing. `SERVEBENCH_CHROMIUM` overrides the binary;
//! `SERVEBENCH_SKIP_BROWSER_TESTS=1` skips the test explicitly (for machines without a browser);
//! `SERVEBENCH_REPORT_SCREENSHOT=PATH` also copies the screenshot to PATH.

use super::{assert_self_contained, fixture_runs, IDS};
use crate::html::html_report;
use servebench_testkit::browser::Chromium;
use std::path::{Path, PathBuf};
use std::process::Output;

fn chromium() -> Option<Chromium> {
    Chromium::find()
}

fn run_browser(bin: &Chromium, profile: &Path, extra: &[String], url: &str) -> Output {
    bin.run(profile, extra, url)
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SERVEBENCH_SKIP_BROWSER_TESTS=1: browser test skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = html_report(&fixture_runs(600, true));
    assert_self_contained(&html);
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    let url = format!("file://{}", page.display());

    let dom = run_browser(&bin, &dir.path().join("profile-dom"), &["--dump-dom".into()], &url);
    let text = String::from_utf8_lossy(&dom.stdout);
    assert!(
        text.contains("<svg"),
        "no DOM from chromium (status {:?}): {}",
        dom.status,
        String::from_utf8_lossy(&dom.stderr)
    );
    assert!(!text.contains("data-error=\""), "the report script threw: {}", &text[..text.len().min(600)]);
    assert!(text.contains("data-ok=\"1\""), "the report script did not finish");
    assert!(text.contains("data-charts=\"12\""), "the script saw a different number of charts");
    assert_eq!(text.matches("<svg").count(), 12);
    for id in IDS {
        let start =
            text.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("chart {id} missing from the DOM"));
        let end = text[start..].find("</svg>").map(|e| start + e).unwrap();
        let chart = &text[start..end];
        assert!(chart.contains("<path d=\"M"), "chart {id} has no drawn series");
        assert!(
            chart.contains("class=\"ticks\"") && chart.contains("class=\"legend\""),
            "chart {id} lacks axes/legend"
        );
    }

    let png = dir.path().join("report.png");
    let shot = run_browser(
        &bin,
        &dir.path().join("profile-shot"),
        &[format!("--screenshot={}", png.display()), "--window-size=1400,4000".into()],
        &url,
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!("no screenshot ({e}); chromium said: {}", String::from_utf8_lossy(&shot.stderr))
    });
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "screenshot is not a PNG");
    assert!(bytes.len() > 50_000, "screenshot suspiciously small ({} bytes)", bytes.len());
    if let Some(copy) = std::env::var_os("SERVEBENCH_REPORT_SCREENSHOT") {
        std::fs::copy(&png, &copy).unwrap();
        let mut html_copy = PathBuf::from(&copy);
        html_copy.set_extension("html");
        std::fs::write(html_copy, &html).unwrap();
    }
}

/// The optional charts (TTFO, per-turn, server metrics), the sweep and the multi-run report render
/// in Chromium:
/// the script finishes without errors and every chart has a drawn series, axes and a legend.
#[test]
fn optional_charts_and_sweep_report_render_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SERVEBENCH_SKIP_BROWSER_TESTS=1: browser test skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pages = [
        ("extended", html_report(&super::extra::extended_runs()), 19, &OPTIONAL_IDS[..]),
        (
            "sweep",
            crate::html::sweep_report(&super::extra::doc(super::extra::sweep_doc("sweep")), &[]).unwrap(),
            6,
            &SWEEP_IDS[..],
        ),
        (
            "search",
            crate::html::sweep_report(&super::extra::doc(super::search::search_doc()), &[]).unwrap(),
            4,
            &SEARCH_IDS[..],
        ),
        ("vllm_arrays", vllm_arrays_report(), 7, &ARRAYS_IDS[..]),
        (
            "multi_run",
            crate::html::sweep_report(&super::extra::doc(super::extra::multi_run_doc()), &[]).unwrap(),
            super::extra::MULTI_RUN_IDS.len(),
            &super::extra::MULTI_RUN_IDS[..],
        ),
    ];
    for (name, html, n_charts, ids) in pages {
        let page = dir.path().join(format!("{name}.html"));
        std::fs::write(&page, &html).unwrap();
        let url = format!("file://{}", page.display());
        let dom =
            run_browser(&bin, &dir.path().join(format!("profile-{name}")), &["--dump-dom".into()], &url);
        let text = String::from_utf8_lossy(&dom.stdout);
        assert!(
            text.contains("<svg"),
            "{name}: no DOM from chromium: {}",
            String::from_utf8_lossy(&dom.stderr)
        );
        assert!(!text.contains("data-error=\""), "{name}: the report script threw");
        assert!(text.contains("data-ok=\"1\""), "{name}: the report script did not finish");
        assert!(
            text.contains(&format!("data-charts=\"{n_charts}\"")),
            "{name}: chart count seen by the script"
        );
        for id in ids {
            let start =
                text.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("{name}: chart {id} missing"));
            let end = text[start..].find("</svg>").map(|e| start + e).unwrap();
            let chart = &text[start..end];
            assert!(chart.contains("<path d=\"M"), "{name}: chart {id} has no drawn series");
            assert!(
                chart.contains("class=\"ticks\"") && chart.contains("class=\"legend\""),
                "{name}: {id} axes"
            );
        }
    }
}

const SEARCH_IDS: [&str; 4] =
    ["search-saturation", "search-saturation-ratio", "sweep-ttft-tok", "sweep-ttft-req"];
const ARRAYS_IDS: [&str; 7] =
    ["ttft-cdf", "ttft-hist", "itl-cdf", "itl-hist", "e2el-cdf", "e2el-hist", "ttft-prompt"];

/// The report of the vLLM 0.33-shaped result fixture drawn from its arrays, without its
/// `start_times` (so without time charts).
fn vllm_arrays_report() -> String {
    let path = servebench_testkit::fixtures::fixture("results/vllm-0.33-detailed.json");
    let mut doc: crate::document::ResultDocument =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc.detailed.start_times = None;
    let a = crate::vllm_arrays::records_from_arrays(&doc.detailed).unwrap();
    let mut run = crate::html::ReportRun::new("vllm", super::header("vllm"), a.records, vec![]);
    run.source = crate::html::RecordSource::DetailedArrays { timed: a.timed };
    html_report(&[run])
}

const OPTIONAL_IDS: [&str; 7] =
    ["ttfo-cdf", "ttft-turn", "e2el-turn", "prompt-turn", "server-requests", "server-kv", "server-prefix"];
const SWEEP_IDS: [&str; 6] = [
    "sweep-ttft-tok",
    "sweep-tpot-tok",
    "sweep-e2el-tok",
    "sweep-ttft-req",
    "sweep-tpot-req",
    "sweep-e2el-req",
];
