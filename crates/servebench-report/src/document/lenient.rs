//! How the result reader is lenient: a key whose value has an unexpected shape reads as absent
//! (as a lookup of that key by name did), and a value shown as written keeps its JSON text.

use serde::de::{DeserializeOwned, IgnoredAny};
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
/// detailed arrays may hold `null`); a value that is not an array is absent.
pub fn numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Option<f64>>>, D::Error> {
    let list = lenient::<D, Vec<Lenient<f64>>>(d)?;
    Ok(list.map(|l| l.into_iter().map(|x| x.0).collect()))
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
