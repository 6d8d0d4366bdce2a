//! A merged sharded run's result document (`servebench merge`; docs/scale-out.md).

use crate::document::ShardEntry;

/// A merged sharded run's result document as `servebench merge` writes it: the run's result
/// (vLLM's keys and ours, as one run), then `shards` and `merge_warnings`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergedDocument {
    pub result: serde_json::Map<String, serde_json::Value>,
    pub shards: Vec<ShardEntry>,
    pub merge_warnings: Vec<String>,
}

impl MergedDocument {
    /// The document as one JSON object, keys in the written order.
    pub fn to_value(&self) -> serde_json::Value {
        let mut o = self.result.clone();
        o.insert("shards".into(), serde_json::to_value(&self.shards).unwrap_or_default());
        o.insert("merge_warnings".into(), serde_json::Value::from(self.merge_warnings.clone()));
        serde_json::Value::Object(o)
    }
}
