//! Each simulator personality serves its engine's `/metrics` names, and those are exactly the
//! names the built-in meanings table (`observe::meaning::NAMES`) knows for that engine: every
//! current name of the table is served, nothing the table reads under another engine or an
//! older name is, and every other name of the engine's own series is one checked against the
//! engine's source (docs/server-metrics.md, "Names checked against each engine").

use servebench_runner::observe::meaning::{Engine, NAMES, OLDER_NAMES};
use servebench_sim::{Personality, SimConfig};
use servebench_testkit::raw_http::Conn;
use std::collections::BTreeSet;

/// The sample names of a text exposition, and each histogram's family name (`_bucket` cut).
fn exported(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let name = line.split(['{', ' ']).next().unwrap_or_default();
        if let Some(family) = name.strip_suffix("_bucket") {
            names.insert(family.to_owned());
        }
        names.insert(name.to_owned());
    }
    names
}

async fn metrics_of(p: Personality) -> String {
    let cfg = SimConfig::new("names", crate::common::cl100k()).with_personality(p);
    let sim = servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let text = Conn::connect(sim.local_addr()).await.get("/metrics").await.text();
    sim.abort();
    text
}

#[tokio::test]
async fn each_personality_serves_exactly_the_names_the_meanings_table_knows_for_its_engine() {
    // (personality, engine, its series prefix, names of its own it serves that have no built-in
    // meaning — each checked in the engine's source too)
    let cases: [(Personality, Engine, &str, &[&str]); 6] = [
        (Personality::Vllm, Engine::Vllm, "vllm:", &["vllm:request_success_total"]),
        (Personality::Sglang, Engine::Sglang, "sglang:", &["sglang:num_requests_total"]),
        (Personality::Tgi, Engine::Tgi, "tgi_", &["tgi_request_success"]),
        (Personality::LlamaCpp, Engine::Llamacpp, "llamacpp:", &[]),
        (Personality::TrtLlm, Engine::Trtllm, "trtllm_", &["trtllm_request_success_total"]),
        (Personality::Dynamo, Engine::Dynamo, "dynamo_", &["dynamo_frontend_requests_total"]),
    ];
    for (p, engine, prefix, unread) in cases {
        let served = exported(&metrics_of(p).await);
        let known: BTreeSet<&str> = NAMES.iter().map(|r| r.name).collect();
        let current: BTreeSet<&str> = NAMES
            .iter()
            .filter(|r| r.engine == engine && !OLDER_NAMES.contains(&r.name))
            .map(|r| r.name)
            .collect();
        let recognised: BTreeSet<&str> =
            served.iter().map(String::as_str).filter(|n| known.contains(n)).collect();
        // vLLM's personality also serves vLLM's two older names, to test the fallback to them.
        let older_served: BTreeSet<&str> = match engine {
            Engine::Vllm => ["vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"].into(),
            _ => BTreeSet::new(),
        };
        let want: BTreeSet<&str> = current.union(&older_served).copied().collect();
        assert_eq!(recognised, want, "{engine:?}: served names the table reads vs the table's names");
        // Every series of the engine's own is read, or a checked name without a meaning (the
        // histogram parts of a family the table reads by its family name are its family's).
        let family = |n: &str| {
            ["_bucket", "_sum", "_count"].iter().find_map(|s| n.strip_suffix(s)).unwrap_or(n).to_owned()
        };
        for n in served.iter().filter(|n| n.starts_with(prefix)) {
            let ok = known.contains(n.as_str())
                || known.contains(family(n).as_str())
                || known.contains(format!("{}_sum", family(n)).as_str())
                || unread.contains(&n.as_str())
                || unread.contains(&family(n).as_str());
            assert!(ok, "{engine:?} serves {n}, a name neither the table nor the checked list has");
        }
    }
}
