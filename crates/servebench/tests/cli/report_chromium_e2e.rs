//! The HTML report of a run with every issue-25 section, opened in headless Chromium: a run
//! scraping two engines' `/metrics` (the target's and one `--server-metrics-url`), reading a
//! simulated DCGM exporter (GPU power and energy) and recording HTTP phases writes
//! `--html-report`; in the browser its script finishes, every section's chart is drawn, the
//! tables are there, and the page writes nothing to the console (no uncaught exception, no
//! `console.error`). Chromium is required (`servebench_testkit::browser`).

use crate::server_metrics_e2e::{run, runtime, sim};
use crate::support::text;
use servebench_sim::power::GpuPowerConfig;
use servebench_sim::Personality;
use servebench_testkit::browser::Chromium;

/// Charts the run's data must produce: client scraping (`--scrape-metrics`), every endpoint,
/// the GPUs' power, the HTTP phases.
const SECTION_CHARTS: [&str; 7] = [
    "server-requests",
    "server-kv",
    "endpoints-load",
    "endpoints-latency",
    "endpoints-tokens",
    "gpu-power",
    "http-phases",
];

#[test]
fn report_with_server_endpoints_gpu_power_and_http_phases_draws_every_chart_in_chromium_without_console_output(
) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("SERVEBENCH_SKIP_BROWSER_TESTS=1: browser test skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The console capture works: a page that throws is caught, so an empty console below means
    // the report's script raised nothing.
    let probe = dir.path().join("probe.html");
    std::fs::write(&probe, "<html><body><script>throw new Error('sb-console-probe')</script></body></html>")
        .unwrap();
    let p = chromium.page(&dir.path().join("profile-probe"), &format!("file://{}", probe.display()));
    assert!(p.console.iter().any(|l| l.contains("sb-console-probe")), "not captured: {}", p.stderr);

    let rt = runtime();
    let power = GpuPowerConfig { gpus: 2, idle_w: 100.0, per_request_w: 50.0, max_w: 1000.0 };
    let (target, other) = (sim(&rt, Personality::Vllm, Some(power)), sim(&rt, Personality::Sglang, None));
    let urls = [target.base_url(), other.base_url()];
    let html = dir.path().join("r.html");
    let extra = [
        "--scrape-metrics".to_owned(),
        "--server-metrics-url".to_owned(),
        format!("{}/metrics", other.base_url()),
        "--gpu-metrics-url".to_owned(),
        format!("{}/dcgm/metrics", target.base_url()),
        "--html-report".to_owned(),
        html.to_str().unwrap().to_owned(),
    ];
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let o = run(dir.path(), &target.base_url(), &extra);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    rt.block_on(target.shutdown());
    rt.block_on(other.shutdown());

    let page = chromium.page(&dir.path().join("profile-report"), &format!("file://{}", html.display()));
    let dom = &page.dom;
    assert!(dom.contains("<svg"), "no DOM from chromium: {}", page.stderr);
    assert!(page.console.is_empty(), "the report wrote to the console: {:?}", page.console);
    assert!(!dom.contains("data-error=\""), "the report script threw");
    assert!(dom.contains("data-ok=\"1\""), "the report script did not finish");
    for id in SECTION_CHARTS {
        let start = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("chart {id} missing"));
        let chart = &dom[start..start + dom[start..].find("</svg>").unwrap()];
        assert!(chart.contains("<path d=\"M"), "chart {id} has no drawn series");
        assert!(chart.contains("class=\"ticks\"") && chart.contains("class=\"legend\""), "chart {id} axes");
    }
    // Both endpoints are in the endpoint charts' legends.
    let load = &dom[dom.find("id=\"endpoints-load\"").unwrap()..];
    let load = &load[..load.find("</svg>").unwrap()];
    for url in &urls {
        let host = url.split("://").nth(1).unwrap();
        assert!(load.contains(&format!("{host}/metrics queue")), "no queue line of {host}: {load}");
    }
    for table in ["id=\"summary\"", "id=\"validity\""] {
        assert!(dom.contains(table), "{table} missing");
    }
    // The run card's energy table: the result's figures for both simulated GPUs.
    let energy = &dom[dom.find("<h4>GPU energy</h4>").expect("no GPU energy table")..];
    let energy = &energy[..energy.find("</table>").unwrap()];
    for row in ["energy per output token (J/token)", "output tokens per joule", "GPU 0 @ ", "GPU 1 @ "] {
        assert!(energy.contains(row), "{row} missing: {energy}");
    }
}
