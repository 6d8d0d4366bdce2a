//! CLI/config parsers of `servebench-core::flag_values`: any flag value must parse or give an
//! error, never panic; values that parse must satisfy the parser's own contract.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_core::flag_values::{
    parse_extra_body, parse_goodput, parse_header, parse_metadata, parse_metric_percentiles,
    parse_percentile_metrics, parse_range_ratio, parse_request_rate,
};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match which % 8 {
        0 => {
            if let Ok(r) = parse_range_ratio(text) {
                for v in [r.input, r.output] {
                    assert!((0.0..1.0).contains(&v), "ratio {v} from {text:?}");
                }
            }
        }
        1 => {
            let items: Vec<String> = text.split_whitespace().map(str::to_string).collect();
            if let Ok(slos) = parse_goodput(&items) {
                assert!(slos.len() <= items.len());
                assert!(slos.iter().all(|s| s.threshold_ms.is_finite() && s.threshold_ms >= 0.0));
            }
        }
        2 => {
            if let Ok((k, _)) = parse_metadata(text) {
                assert!(!k.is_empty() && k == k.trim(), "metadata key {k:?} from {text:?}");
            }
        }
        3 => {
            if let Ok(h) = parse_header(text) {
                assert!(!h.name.is_empty(), "empty header name from {text:?}");
            }
        }
        4 => {
            let _ = parse_extra_body(text);
        }
        5 => {
            if let Ok(r) = parse_request_rate(text) {
                assert!(r > 0.0 && !r.is_nan(), "request rate {r} from {text:?}");
            }
        }
        6 => {
            let _ = parse_percentile_metrics(text);
        }
        _ => {
            if let Ok(ps) = parse_metric_percentiles(text) {
                assert!(ps.iter().all(|p| (0.0..=100.0).contains(p)), "{ps:?} from {text:?}");
            }
        }
    }
});
