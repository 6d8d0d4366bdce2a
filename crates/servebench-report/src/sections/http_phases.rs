//! HTTP phases in the console (`--verbose`): connections new and reused, then one row per
//! phase with its mean, median and p99 over the completed requests that had it
//! (docs/metrics.md, "HTTP phases"; the result's `http_phases` block is the core's summary).

use std::fmt::Write as _;

use servebench_core::metrics::http_phases::HttpPhaseSummary;

/// What each phase measures, for the console and the HTML report.
pub fn phase_label(key: &str) -> &'static str {
    match key {
        "dns" => "DNS (duration)",
        "connect" => "Connect (duration)",
        "tls" => "TLS handshake (duration)",
        "request_written" => "Request written",
        "first_byte" => "First response byte",
        "response_head" => "Response head",
        "first_token" => "First token",
        "last_byte" => "Last byte",
        _ => "",
    }
}

/// The console block.
pub fn http_phases_block(p: &HttpPhaseSummary) -> String {
    let mut out = format!("{:=^50}\n", " HTTP phases (ms) ");
    let _ = writeln!(
        out,
        "{:<26}{} new, {} reused",
        "Connections (requests):", p.new_connections, p.reused_connections
    );
    let _ = writeln!(out, "  set-up phases are durations; the rest are from the start of the write");
    let _ = writeln!(out, "{:<26}{:>8}{:>8}{:>8}{:>8}", "", "n", "mean", "median", "p99");
    for (key, s) in p.phases() {
        match s {
            Some(s) => {
                let label = phase_label(key);
                let _ = writeln!(
                    out,
                    "{label:<26}{:>8}{:>8.2}{:>8.2}{:>8.2}",
                    s.count, s.mean_ms, s.median_ms, s.p99_ms
                );
            }
            None => {
                let _ = writeln!(out, "{:<26}{:>8}", phase_label(key), "n/a");
            }
        }
    }
    out.push_str(&"=".repeat(50));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::metrics::http_phases::PhaseStats;

    #[test]
    fn the_block_shows_every_phase_and_na_for_absent_ones() {
        let s = |ms| Some(PhaseStats { count: 2, mean_ms: ms, median_ms: ms, p99_ms: ms });
        let p = HttpPhaseSummary {
            requests: 2,
            new_connections: 1,
            reused_connections: 1,
            dns: None,
            connect: Some(PhaseStats { count: 1, mean_ms: 0.25, median_ms: 0.25, p99_ms: 0.25 }),
            tls: None,
            request_written: s(0.04),
            first_byte: s(10.0),
            response_head: s(10.0),
            first_token: s(12.5),
            last_byte: s(40.0),
        };
        let b = http_phases_block(&p);
        assert!(b.contains("Connections (requests):   1 new, 1 reused"), "{b}");
        assert!(b.contains("DNS (duration)                 n/a"), "{b}");
        assert!(b.contains("Connect (duration)               1    0.25    0.25    0.25"), "{b}");
        assert!(b.contains("First token                      2   12.50   12.50   12.50"), "{b}");
    }
}
