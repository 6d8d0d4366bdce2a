//! How the result reader is lenient: a key whose value has an unexpected shape reads as absent
//! (as a lookup of that key by name did), and a value shown as written keeps its JSON text.

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// `Some` when the value has `T`'s shape, `None` otherwise (`null`, a string where a number was
/// expected, ...). Never fails, so one odd key never rejects a whole document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lenient<T>(pub Option<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(v).ok()))
    }
}

impl<T: Serialize> Serialize for Lenient<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A field read leniently (`#[serde(default, deserialize_with = "lenient")]`).
pub fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Lenient::<T>::deserialize(d).map(|l| l.0)
}

/// Like [`Lenient`], for a struct: `Some` only for a JSON object of `T`'s shape (serde would
/// also read a struct from an array, by position; a lookup by key never did).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object<T>(pub Option<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Object(if v.is_object() { T::deserialize(v).ok() } else { None }))
    }
}

impl<T: Serialize> Serialize for Object<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A struct field read leniently (`#[serde(default, deserialize_with = "object")]`).
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Object::<T>::deserialize(d).map(|o| o.0)
}

/// The numbers of an array read leniently: an entry that is not a number is `None` (vLLM's
/// detailed arrays may hold `null`); a value that is not an array is absent. Read straight from
/// the text, with no generic JSON value on the way: a per-request array of a large run holds
/// millions of numbers, and a generic value takes 4–9 times a number's 8 bytes.
pub fn numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Option<f64>>>, D::Error> {
    d.deserialize_any(Visit(ListOf(Number)))
}

/// One array of numbers per request (`itls`), an entry or a number of another shape `None`.
pub type GapLists = Vec<Lenient<Vec<Lenient<f64>>>>;

/// `itls`: one array of numbers per request, each read as [`numbers`] reads one; an entry that
/// is not an array is `None`.
pub fn number_lists<'de, D: Deserializer<'de>>(d: D) -> Result<Option<GapLists>, D::Error> {
    let lists = d.deserialize_any(Visit(ListOf(ListOf(Number))))?;
    Ok(lists
        .map(|l| l.into_iter().map(|e| Lenient(e.map(|g| g.into_iter().map(Lenient).collect()))).collect()))
}

/// `errors`: an array of strings read leniently (an entry that is not a string is `None`).
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Lenient<String>>>, D::Error> {
    let list = d.deserialize_any(Visit(ListOf(Text)))?;
    Ok(list.map(|l| l.into_iter().map(Lenient).collect()))
}

/// What one lenient value is read as, from a [`Visitor`]'s callbacks: the value, or `None` for
/// any other shape (consumed without being built).
trait Shape: Copy {
    type Out;
    fn number(self, _v: f64) -> Option<Self::Out> {
        None
    }
    fn text(self, _v: &str) -> Option<Self::Out> {
        None
    }
    fn list<'de, A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Self::Out>, A::Error> {
        skip_seq(seq).map(|()| None)
    }
}

/// A number (any JSON number, as `f64`).
#[derive(Clone, Copy)]
struct Number;

impl Shape for Number {
    type Out = f64;
    fn number(self, v: f64) -> Option<f64> {
        Some(v)
    }
}

/// A string.
#[derive(Clone, Copy)]
struct Text;

impl Shape for Text {
    type Out = String;
    fn text(self, v: &str) -> Option<String> {
        Some(v.to_owned())
    }
}

/// An array whose entries are read as `S`, each keeping its place (`None` for another shape).
#[derive(Clone, Copy)]
struct ListOf<S>(S);

impl<S: Shape> Shape for ListOf<S> {
    type Out = Vec<Option<S::Out>>;
    fn list<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Self::Out>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
        while let Some(v) = seq.next_element_seed(Visit(self.0))? {
            out.push(v);
        }
        Ok(Some(out))
    }
}

/// Reads a value of shape `S` from any JSON value (a seed for list entries, a visitor for the
/// value itself).
#[derive(Clone, Copy)]
struct Visit<S>(S);

impl<'de, S: Shape> DeserializeSeed<'de> for Visit<S> {
    type Value = Option<S::Out>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<S::Out>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Shape> Visitor<'de> for Visit<S> {
    type Value = Option<S::Out>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.0.number(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.0.number(v as f64))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.0.number(v as f64))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.text(v))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.list(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Whether a key is present at all (even as `null`): `#[serde(default, deserialize_with =
/// "present")]`.
pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// A value shown as written (the report header's configuration rows): a string as is, `null` as
/// `none`, anything else as its JSON text (`10`, `2.5`, `"inf"` → `inf`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Shown(Value);

impl Shown {
    /// The value as the report shows it.
    pub fn text(&self) -> String {
        match &self.0 {
            Value::String(s) => s.clone(),
            Value::Null => "none".into(),
            other => other.to_string(),
        }
    }

    /// The value's JSON text (a string in quotes).
    pub fn json(&self) -> String {
        self.0.to_string()
    }

    /// The value when it is a string.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_str()
    }

    /// The value as a number: a JSON number, or a string holding one (`"30.0"`, `"inf"`).
    pub fn as_f64(&self) -> Option<f64> {
        match &self.0 {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        self.0.is_null()
    }
}

impl From<Value> for Shown {
    fn from(v: Value) -> Self {
        Shown(v)
    }
}

/// A field shown as written, `null` included (`#[serde(default, deserialize_with = "shown")]`):
/// `None` only when the key is absent.
pub fn shown<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Shown>, D::Error> {
    Shown::deserialize(d).map(Some)
}
