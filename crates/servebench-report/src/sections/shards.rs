//! The shards section of a merged run (`servebench merge`; docs/scale-out.md): the per-shard
//! console table (client health, clock-skew estimates) and the result's `shards` key.

use crate::fmt::ms_2dp_or_dash;
use servebench_core::merge::MergedRun;

use crate::document::{MergedShard, MissingShard, ShardEntry};

/// Per-shard client health and clock-skew estimates, as a console table.
pub fn shard_table(m: &MergedRun) -> String {
    let mut out = format!(
        "Shards: {} of {} merged (fingerprint {}…, seed {})\n",
        m.shards.len(),
        m.header.num_shards,
        m.header.workload_fingerprint.chars().take(12).collect::<String>(),
        m.header.seed
    );
    out.push_str(&format!(
        "{:<6}{:>9}{:>12}{:>15}{:>11}{:>15}{:>13}{:>13}{:>8}\n",
        "shard",
        "records",
        "origin+ms",
        "anchor-start",
        "waited s",
        "1st late ms",
        "late p99 ms",
        "hiccup p99",
        "CPU %"
    ));
    for s in &m.shards {
        let sum = s.summary.as_ref();
        out.push_str(&format!(
            "{:<6}{:>9}{:>12.3}{:>15}{:>11}{:>15}{:>13}{:>13}{:>8}\n",
            s.shard_index,
            s.records,
            s.anchor_offset_us as f64 / 1000.0,
            s.anchor_minus_start_us.map_or_else(|| "-".into(), |v| format!("{v} µs")),
            s.waited_us.map_or_else(|| "-".into(), |v| format!("{:.1}", v as f64 / 1e6)),
            ms_2dp_or_dash(sum.and_then(|x| x.first_dispatch_lateness_us).map(|v| v as f64)),
            ms_2dp_or_dash(sum.and_then(|x| x.dispatch_lateness_p99_us)),
            ms_2dp_or_dash(sum.and_then(|x| x.hiccup_p99_us)),
            sum.filter(|x| x.wall_seconds > 0.0).map_or_else(
                || "-".into(),
                |x| format!("{:.0}", x.client_cpu_seconds / x.wall_seconds * 100.0)
            ),
        ));
    }
    out.push_str(&skew_line(m));
    out
}

fn skew_line(m: &MergedRun) -> String {
    let spread = m.shards.iter().map(|s| s.anchor_offset_us).max().unwrap_or(0);
    format!(
        "Clock skew estimate: shard origins within {:.3} ms of each other on their own clocks{}; \
         offsets between host clocks themselves (NTP) are not visible in records\n",
        spread as f64 / 1000.0,
        if m.header.start_at_unix_us.is_some() {
            " (all anchored on --start-at)"
        } else {
            " (no --start-at)"
        }
    )
}

/// The `shards` key of the merged result: the merged shards, then the missing ones.
pub fn shard_entries(m: &MergedRun) -> Vec<ShardEntry> {
    m.shards
        .iter()
        .map(|s| {
            ShardEntry::Merged(Box::new(MergedShard {
                shard_index: Some(s.shard_index),
                records_file: Some(s.source.clone()),
                records: Some(s.records as u64),
                origin_offset_us: Some(s.anchor_offset_us),
                anchor_minus_start_at_us: s.anchor_minus_start_us,
                waited_for_start_us: s.waited_us,
                client_health: s.summary.clone(),
            }))
        })
        .chain(m.missing.iter().map(|&i| ShardEntry::Missing(MissingShard { shard_index: i, missing: true })))
        .collect()
}
