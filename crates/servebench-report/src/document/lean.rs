//! A JSON document read from its text with its per-request arrays (vLLM's `--save-detailed`:
//! `ttfts`, `itls`, …) read straight into numbers, and only its other keys as a generic JSON
//! value. Read whole as a generic value, a result of a large run cost about 160 bytes of memory
//! per inter-token gap (a 50 MB file took 791 MB): a number as a generic value, then again as
//! the buffered content of the flattened structs, then once more per lenient field.

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::lenient::{number_lists, numbers, strings, GapLists, Lenient};
use super::result::DetailedArrays;

/// A JSON text read so: an object's keys other than the per-request arrays (`None` for a text
/// that is another JSON value: an array, a number, …, not kept), and those arrays.
#[derive(Debug)]
pub(super) struct LeanJson {
    rest: Option<Map<String, Value>>,
    arrays: DetailedArrays,
}

impl LeanJson {
    /// The whole text, else its last non-blank line (a JSONL file written with
    /// `--append-result`: the last result wins). The error is the last line's.
    pub(super) fn whole_or_last_line(text: &str) -> Result<LeanJson, serde_json::Error> {
        serde_json::from_str(text).or_else(|_| {
            let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
            serde_json::from_str(last)
        })
    }

    /// The keys other than the per-request arrays, as a JSON value (`Null` for a text that is
    /// not an object).
    pub(super) fn rest_value(&mut self) -> Value {
        self.rest.take().map_or(Value::Null, Value::Object)
    }

    pub(super) fn take_arrays(&mut self) -> DetailedArrays {
        std::mem::take(&mut self.arrays)
    }

    fn other() -> LeanJson {
        LeanJson { rest: None, arrays: DetailedArrays::default() }
    }
}

#[derive(Deserialize)]
#[serde(transparent)]
struct Numbers(#[serde(deserialize_with = "numbers")] Option<Vec<Option<f64>>>);

#[derive(Deserialize)]
#[serde(transparent)]
struct NumberLists(#[serde(deserialize_with = "number_lists")] Option<GapLists>);

#[derive(Deserialize)]
#[serde(transparent)]
struct Strings(#[serde(deserialize_with = "strings")] Option<Vec<Lenient<String>>>);

impl<'de> Deserialize<'de> for LeanJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Top)
    }
}

struct Top;

impl<'de> Visitor<'de> for Top {
    type Value = LeanJson;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LeanJson, A::Error> {
        let (mut rest, mut a) = (Map::new(), DetailedArrays::default());
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "ttfts" => a.ttfts = map.next_value::<Numbers>()?.0,
                "latencies" => a.latencies = map.next_value::<Numbers>()?.0,
                "output_lens" => a.output_lens = map.next_value::<Numbers>()?.0,
                "input_lens" => a.input_lens = map.next_value::<Numbers>()?.0,
                "start_times" => a.start_times = map.next_value::<Numbers>()?.0,
                "itls" => a.itls = map.next_value::<NumberLists>()?.0,
                "errors" => a.errors = map.next_value::<Strings>()?.0,
                _ => {
                    rest.insert(key, map.next_value()?);
                }
            }
        }
        Ok(LeanJson { rest: Some(rest), arrays: a })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LeanJson, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LeanJson::other())
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<LeanJson, E> {
        Ok(LeanJson::other())
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<LeanJson, E> {
        Ok(LeanJson::other())
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<LeanJson, E> {
        Ok(LeanJson::other())
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<LeanJson, E> {
        Ok(LeanJson::other())
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<LeanJson, E> {
        Ok(LeanJson::other())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<LeanJson, E> {
        Ok(LeanJson::other())
    }
}
