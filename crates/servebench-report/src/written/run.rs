//! The result document of one run as servebench writes it (`--save-result`, each point of an
//! experiment): vLLM's keys and servebench's own (`crate::result_json`, whose per-percentile and
//! `--metadata` keys are dynamic), then the keys a run adds, each typed by the section that owns
//! it. Written whole, never patched by key; what is read back of it goes through
//! [`RunDocument::metrics`] (the typed [`Metrics`] reader `report` and `compare` use).

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use servebench_core::metrics::SteadyState;

use crate::document::Metrics;
use crate::per_request::PerRequestArrays;
use crate::sections::probe::ProbeSummary;
use crate::sections::server::ServerSection;
use crate::sections::steady_state::steady_state_json;

/// One run's result document, in the order its keys are written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunDocument {
    /// vLLM's keys in vLLM's order, then servebench's (`crate::result_json`); the per-request
    /// arrays' places hold `null` placeholders, their values are `arrays`.
    pub result: Map<String, Value>,
    /// The per-request arrays (`crate::per_request`), written in their places.
    pub arrays: PerRequestArrays,
    /// `records_file`: the records' file name beside the result, when records were written.
    pub records_file: Option<String>,
    /// `interrupted`: the run was stopped early (Ctrl-C / SIGTERM).
    pub interrupted: bool,
    /// `early_stop`: always written, `null` unless the run stopped early (docs/metrics.md).
    pub early_stop: Option<servebench_core::early_stop::EarlyStopReport>,
    /// The group sections' keys (`per_turn_metrics`, `stages`, `schedule_lag`, ...;
    /// `crate::sections::groups::result_keys`).
    pub groups: Map<String, Value>,
    /// `steady_state`: always written, `null` without a window.
    pub steady_state: Option<SteadyState>,
    /// `steady_state_reason`: why there is no window, when one was looked for.
    pub steady_state_reason: Option<String>,
    /// `server_metrics`, the spec-decode keys and `profile` (`crate::sections::server`).
    pub server: ServerSection,
    /// `probe_*` (`--probe-request-rate`).
    pub probes: Option<ProbeSummary>,
    /// `server_tokenize`: the prompt-length check with the server's tokenizer.
    pub server_tokenize: Option<ServerTokenizeDoc>,
}

/// `server_tokenize`: how the prompt-length check with the server's `/tokenize` went
/// (docs/backends.md, "Server tokenizer"); `null` for what does not apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerTokenizeDoc {
    /// `skipped`, `cached`, `verified`, `fixed` or `unavailable`.
    pub verification: String,
    /// The `/tokenize` dialect that answered (`prompt`, `content`, `inputs`, `text`).
    pub dialect: Option<String>,
    /// Servers known to speak the dialect.
    pub servers: Option<String>,
    pub tokenize_path: Option<String>,
    pub detokenize_path: Option<String>,
    pub checked: Option<u64>,
    pub fixed: Option<u64>,
    pub unresolved: Option<u64>,
    /// Why the endpoint could not be used.
    pub detail: Option<String>,
}

impl RunDocument {
    /// The document as one JSON object, keys in the written order (a later key of the same name
    /// replaces an earlier one in place, as a `--metadata` key named like a result key always did).
    pub fn to_value(&self) -> Value {
        let mut result = self.result.clone();
        self.arrays.fill(&mut result);
        self.with_result(result)
    }

    /// The document as one JSON object with its per-request arrays apart (their places hold
    /// `null`), without copying them: what `crate::files::write_result_with` writes whole.
    pub fn into_parts(mut self) -> (Value, PerRequestArrays) {
        let result = std::mem::take(&mut self.result);
        (self.with_result(result), std::mem::take(&mut self.arrays))
    }

    /// The document's keys after `result`'s.
    fn with_result(&self, mut o: Map<String, Value>) -> Value {
        if let Some(r) = &self.records_file {
            o.insert("records_file".into(), Value::from(r.clone()));
        }
        o.insert("interrupted".into(), Value::Bool(self.interrupted));
        o.insert("early_stop".into(), serde_json::to_value(&self.early_stop).unwrap_or(Value::Null));
        o.extend(self.groups.clone());
        o.insert("steady_state".into(), self.steady_state.as_ref().map_or(Value::Null, steady_state_json));
        if let Some(reason) = &self.steady_state_reason {
            o.insert("steady_state_reason".into(), Value::from(reason.clone()));
        }
        if let Ok(Value::Object(server)) = serde_json::to_value(&self.server) {
            o.extend(server);
        }
        if let Some(p) = &self.probes {
            p.add_to(&mut o);
        }
        if let Some(t) = &self.server_tokenize {
            o.insert("server_tokenize".into(), serde_json::to_value(t).unwrap_or_default());
        }
        Value::Object(o)
    }

    /// The document's metrics (headline, latency statistics, steady-state throughputs), read
    /// through the typed reader of result documents.
    pub fn metrics(&self) -> Metrics {
        // No metric is read from a per-request array: their placeholders stay as they are.
        Metrics::deserialize(&self.with_result(self.result.clone())).unwrap_or_default()
    }
}

impl Serialize for RunDocument {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::server::ServerMetrics;
    use serde_json::json;

    /// The keys a run adds come after vLLM's and ours, in this order, whatever is set.
    #[test]
    fn keys_are_written_in_order_and_absent_ones_are_left_out() {
        let mut result = Map::new();
        let mut arrays = PerRequestArrays::default();
        result.insert("date".into(), json!("20261129-211348"));
        arrays.insert(&mut result, "latencies", crate::per_request::Column::Floats(vec![0.5, 0.0, 0.25]));
        result.insert("completed".into(), json!(3));
        let mut groups = Map::new();
        groups.insert("stages".into(), json!([]));
        let doc = RunDocument {
            result,
            arrays,
            records_file: Some("r.jsonl".into()),
            interrupted: true,
            early_stop: None,
            groups,
            steady_state: None,
            steady_state_reason: Some("too short".into()),
            server: ServerSection::new(Some(&ServerMetrics::default()), None),
            probes: None,
            server_tokenize: Some(ServerTokenizeDoc { verification: "skipped".into(), ..Default::default() }),
        };
        let v = doc.to_value();
        let keys: Vec<&str> = v.as_object().into_iter().flat_map(|o| o.keys()).map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "date",
                "latencies",
                "completed",
                "records_file",
                "interrupted",
                "early_stop",
                "stages",
                "steady_state",
                "steady_state_reason",
                "server_metrics",
                "server_tokenize"
            ]
        );
        assert!(v["steady_state"].is_null());
        assert_eq!(v["latencies"], json!([0.5, 0.0, 0.25]));
        assert_eq!(doc.metrics().completed, Some(3.0));
        // Apart, the arrays keep their place as `null`, and the file written from the parts is
        // the whole document.
        let (parts, arrays) = doc.clone().into_parts();
        assert!(parts["latencies"].is_null());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        crate::files::write_result_with(&path, &parts, &arrays, false).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), crate::files::to_python_json(&v));
        let bare = RunDocument::default().to_value();
        let keys: Vec<&String> = bare.as_object().into_iter().flat_map(|o| o.keys()).collect();
        assert_eq!(keys, ["interrupted", "early_stop", "steady_state"]);
        assert!(v["early_stop"].is_null(), "null when the run did not stop early");
    }
}
