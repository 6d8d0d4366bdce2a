//! A merged sharded run's result document (`servebench merge`; docs/scale-out.md).

use servebench_core::metrics::SteadyState;

use crate::document::ShardEntry;
use crate::sections::steady_state::steady_state_json;

/// A merged sharded run's result document as `servebench merge` writes it: the run's result
/// (vLLM's keys and ours, as one run), `interrupted` and `steady_state` (as a single run writes
/// them), then `shards` and `merge_warnings`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergedDocument {
    pub result: serde_json::Map<String, serde_json::Value>,
    /// The sections over the union of the records a run's result has too (`stages`,
    /// `http_phases`, trace `schedule_lag`), written after `result`'s keys.
    pub groups: serde_json::Map<String, serde_json::Value>,
    /// `interrupted`: a shard was stopped early.
    pub interrupted: bool,
    /// `steady_state` over the merged records: always written, `null` without a window.
    pub steady_state: Option<SteadyState>,
    /// `steady_state_reason`: why there is no window, when one was looked for.
    pub steady_state_reason: Option<String>,
    /// `early_stop`: always written, `null` unless a shard stopped early (the first to stop,
    /// on the merged clock; docs/scale-out.md).
    pub early_stop: Option<servebench_core::early_stop::EarlyStopReport>,
    pub shards: Vec<ShardEntry>,
    pub merge_warnings: Vec<String>,
}

impl MergedDocument {
    /// The document as one JSON object, keys in the written order.
    pub fn to_value(&self) -> serde_json::Value {
        let mut o = self.result.clone();
        o.extend(self.groups.clone());
        o.insert("interrupted".into(), serde_json::Value::Bool(self.interrupted));
        o.insert("early_stop".into(), serde_json::to_value(&self.early_stop).unwrap_or_default());
        o.insert(
            "steady_state".into(),
            self.steady_state.as_ref().map_or(serde_json::Value::Null, steady_state_json),
        );
        if let Some(reason) = &self.steady_state_reason {
            o.insert("steady_state_reason".into(), serde_json::Value::from(reason.clone()));
        }
        o.insert("shards".into(), serde_json::to_value(&self.shards).unwrap_or_default());
        o.insert("merge_warnings".into(), serde_json::Value::from(self.merge_warnings.clone()));
        serde_json::Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23.13: a merged result has the `interrupted` and `steady_state` keys a single run
    /// has (after the run's result, before `shards`), and `steady_state_reason` without a window.
    #[test]
    fn merged_document_has_interrupted_and_steady_state_keys() {
        let mut result = serde_json::Map::new();
        result.insert("completed".into(), serde_json::json!(3));
        let doc = MergedDocument {
            result,
            interrupted: true,
            steady_state: None,
            steady_state_reason: Some("too few requests to tell".into()),
            ..Default::default()
        };
        let v = doc.to_value();
        let keys: Vec<&str> = v.as_object().into_iter().flat_map(|o| o.keys()).map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "completed",
                "interrupted",
                "early_stop",
                "steady_state",
                "steady_state_reason",
                "shards",
                "merge_warnings"
            ]
        );
        assert_eq!(v["interrupted"], true);
        assert!(v["steady_state"].is_null());
        let bare = MergedDocument::default().to_value();
        assert_eq!(bare["interrupted"], false);
        assert!(bare
            .as_object()
            .is_some_and(|o| o.contains_key("steady_state") && !o.contains_key("steady_state_reason")));
    }
}
