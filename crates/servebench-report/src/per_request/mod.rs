//! vLLM's per-request arrays of a result (`latencies`, `queue_times`, and with
//! `--save-detailed` `input_lens`, `output_lens`, `ttfts`, `itls`, `start_times`,
//! `generated_texts`, `errors`), held column by column at their own width (8 bytes a number, 4
//! an inter-token gap) instead of as JSON values (72 bytes each, every gap too), and written in
//! place of their keys when the result is saved (`crate::files::write_result_with`). A result
//! of a million requests held 144 MB of values for its two default arrays alone.
//!
//! The result map keeps each array's place as a `null` placeholder; [`PerRequestArrays::fill`]
//! turns the placeholders into values where a whole `Value` is wanted (experiment points,
//! `result_json`).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

mod index_order;
pub use index_order::IndexOrder;

/// One per-request array.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// A float per request (seconds, as vLLM writes them).
    Floats(Vec<f64>),
    /// A count per request.
    Counts(Vec<u64>),
    /// A list of gaps per request, held in µs and written in seconds: request `i`'s gaps are
    /// `gaps_us[ends[i − 1]..ends[i]]` (`ends[−1]` = 0).
    GapsSeconds { ends: Vec<usize>, gaps_us: Vec<u32> },
    /// A string per request.
    Texts(Vec<String>),
}

impl Column {
    /// Request `i`'s gaps, µs.
    fn gaps<'a>(ends: &[usize], gaps_us: &'a [u32], i: usize) -> &'a [u32] {
        let start = if i == 0 { 0 } else { ends[i - 1] };
        &gaps_us[start..ends[i]]
    }

    /// The array as a JSON value (what writing it produces).
    pub fn to_value(&self) -> Value {
        match self {
            Column::Floats(v) => v.iter().map(|&x| Value::from(x)).collect(),
            Column::Counts(v) => v.iter().map(|&x| Value::from(x)).collect(),
            Column::GapsSeconds { ends, gaps_us } => {
                let one = |i| {
                    Value::Array(
                        Column::gaps(ends, gaps_us, i).iter().map(|&g| gap_seconds(g).into()).collect(),
                    )
                };
                Value::Array((0..ends.len()).map(one).collect())
            }
            Column::Texts(v) => v.iter().map(|s| Value::from(s.as_str())).collect(),
        }
    }
}

fn gap_seconds(g: u32) -> f64 {
    f64::from(g) / 1e6
}

/// Non-finite floats are written as `null`, as a `Value` made from them is.
fn float(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl Serialize for Column {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Column::Floats(v) => s.collect_seq(v.iter().map(|&x| float(x))),
            Column::Counts(v) => s.collect_seq(v),
            Column::GapsSeconds { ends, gaps_us } => {
                let mut seq = s.serialize_seq(Some(ends.len()))?;
                for i in 0..ends.len() {
                    seq.serialize_element(&GapsOf(Column::gaps(ends, gaps_us, i)))?;
                }
                seq.end()
            }
            Column::Texts(v) => s.collect_seq(v),
        }
    }
}

/// One request's gaps (µs), written in seconds.
struct GapsOf<'a>(&'a [u32]);

impl Serialize for GapsOf<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|&g| gap_seconds(g)))
    }
}

/// The per-request arrays of one result, by key, in the order they were put.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerRequestArrays {
    columns: Vec<(String, Column)>,
}

impl PerRequestArrays {
    /// Puts `column` under `key`, replacing an earlier one; a `null` placeholder in `o` keeps
    /// the key's place among the result's keys.
    pub fn insert(&mut self, o: &mut Map<String, Value>, key: &str, column: Column) {
        o.insert(key.into(), Value::Null);
        match self.columns.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = column,
            None => self.columns.push((key.into(), column)),
        }
    }

    /// The array under `key`.
    pub fn get(&self, key: &str) -> Option<&Column> {
        self.columns.iter().find(|(k, _)| k == key).map(|(_, c)| c)
    }

    /// Replaces `o`'s placeholders with the arrays as JSON values.
    pub fn fill(&self, o: &mut Map<String, Value>) {
        for (key, column) in &self.columns {
            if let Some(v) = o.get_mut(key).filter(|v| v.is_null()) {
                *v = column.to_value();
            }
        }
    }
}

/// `value` with `arrays` written in place of their placeholders (top-level keys only).
#[derive(Debug)]
pub struct WithArrays<'a> {
    pub value: &'a Value,
    pub arrays: &'a PerRequestArrays,
}

impl Serialize for WithArrays<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(o) = self.value else { return self.value.serialize(s) };
        let mut map = s.serialize_map(Some(o.len()))?;
        for (k, v) in o {
            match self.arrays.get(k).filter(|_| v.is_null()) {
                Some(column) => map.serialize_entry(k, column)?,
                None => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrays() -> (Map<String, Value>, PerRequestArrays) {
        let mut o = Map::new();
        let mut a = PerRequestArrays::default();
        o.insert("before".into(), Value::from(1));
        a.insert(&mut o, "latencies", Column::Floats(vec![0.25, 0.0, f64::NAN, 1e-7]));
        a.insert(&mut o, "input_lens", Column::Counts(vec![3, 0, 7, 2]));
        let gaps = Column::GapsSeconds { ends: vec![2, 2, 3, 3], gaps_us: vec![10_000, 20, 7] };
        a.insert(&mut o, "itls", gaps);
        a.insert(&mut o, "errors", Column::Texts(vec!["".into(), "x \"y\"".into(), "".into(), "".into()]));
        o.insert("after".into(), Value::from("z"));
        (o, a)
    }

    /// Pins the written arrays being exactly what the `Value` arrays they replace wrote (key
    /// order, number formatting, `null` for a non-finite float, nested gaps).
    #[test]
    fn written_in_place_as_the_values_they_replace() {
        let (o, a) = arrays();
        let streamed =
            serde_json::to_string(&WithArrays { value: &Value::Object(o.clone()), arrays: &a }).unwrap();
        let mut filled = o;
        a.fill(&mut filled);
        assert_eq!(streamed, serde_json::to_string(&filled).unwrap());
        let expected = serde_json::json!({
            "before": 1, "latencies": [0.25, 0.0, null, 1e-7], "input_lens": [3, 0, 7, 2],
            "itls": [[0.01, 0.00002], [], [0.000007], []], "errors": ["", "x \"y\"", "", ""], "after": "z"
        });
        assert_eq!(Value::Object(filled), expected);
    }

    #[test]
    fn a_later_column_replaces_an_earlier_and_a_key_set_after_wins() {
        let (mut o, mut a) = arrays();
        a.insert(&mut o, "input_lens", Column::Counts(vec![9]));
        o.insert("errors".into(), Value::from("metadata"));
        let mut filled = o.clone();
        a.fill(&mut filled);
        assert_eq!(filled["input_lens"], serde_json::json!([9]));
        assert_eq!(filled["errors"], "metadata");
        let streamed = serde_json::to_string(&WithArrays { value: &Value::Object(o), arrays: &a }).unwrap();
        assert_eq!(streamed, serde_json::to_string(&filled).unwrap());
    }
}
