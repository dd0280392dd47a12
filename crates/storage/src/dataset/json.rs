//! JSON read with every object's keys checked. serde_json keeps the last of a repeated key
//! without a word (and other readers keep the first), so a row such as `{"id": "a", "id": "b"}`
//! or `"labels": {"pass": true, "pass": false}` would be read as one of two different rows. These
//! visitors build the same [`Value`]s as serde_json's own and refuse a key an object already has;
//! the check is the return value of the insert they make anyway, so a row is still parsed once.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Where a repeated key is, from the innermost object out: filled once a duplicate is found, as
/// the error travels up through the enclosing objects and lists.
type Trail = RefCell<Option<Vec<String>>>;

/// A repeated key: the top-level field it is in, and its path from there (`meta.topic`,
/// `critiques[0].score`; the field itself for a top-level key).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DuplicateKey {
    pub field: String,
    pub path: String,
}

impl DuplicateKey {
    fn from_trail(mut trail: Vec<String>) -> DuplicateKey {
        trail.reverse();
        let mut path = String::new();
        for part in &trail {
            if !path.is_empty() && !part.starts_with('[') {
                path.push('.');
            }
            path.push_str(part);
        }
        DuplicateKey { field: trail.first().cloned().unwrap_or_default(), path }
    }

    /// The same key found in the JSON text of the cell of `field` (CSV, Parquet).
    pub fn inside(self, field: &str) -> DuplicateKey {
        let separator = if self.path.starts_with('[') { "" } else { "." };
        DuplicateKey { field: field.to_string(), path: format!("{field}{separator}{}", self.path) }
    }

    /// What the row's message says.
    pub fn message(&self) -> String {
        if self.path == self.field {
            "appears twice in the row; give each field once (JSON readers disagree on which copy wins)".to_string()
        } else {
            format!(
                "key `{}` appears twice; give each key of an object once (JSON readers disagree on which copy wins)",
                self.path
            )
        }
    }
}

/// Parses `text` as one JSON value: a repeated key anywhere is `Err(Ok(duplicate))`, text that is
/// not JSON `Err(Err(error))`.
pub(crate) fn parse(text: &str) -> Result<Value, Result<DuplicateKey, serde_json::Error>> {
    let trail = Trail::default();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Strict { trail: Some(&trail) }.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    parsed.map_err(|error| match trail.into_inner() {
        Some(trail) => Ok(DuplicateKey::from_trail(trail)),
        None => Err(error),
    })
}

/// A [`Value`] whose objects have no repeated key, for typed rows (`#[serde(deserialize_with)]`
/// and `Vec<Checked>`): the fast way into a task, where any error sends the row to [`parse`] for
/// its message.
pub(crate) struct Checked(pub Value);

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Checked, D::Error> {
        Strict { trail: None }.deserialize(deserializer).map(Checked)
    }
}

/// An object of strings (a task's `evidence`) with no repeated key.
pub(crate) fn string_map<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error> {
    struct Strings;
    impl<'de> Visitor<'de> for Strings {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut strings = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                let value: String = map.next_value()?;
                match strings.entry(key) {
                    Entry::Occupied(entry) => {
                        return Err(de::Error::custom(format!("duplicate key `{}`", entry.key())));
                    }
                    Entry::Vacant(entry) => entry.insert(value),
                };
            }
            Ok(strings)
        }
    }
    deserializer.deserialize_map(Strings)
}

/// Builds a [`Value`] as serde_json's own visitor does, refusing a repeated key. With a trail,
/// it records where the repeated key is.
#[derive(Clone, Copy)]
struct Strict<'t> {
    trail: Option<&'t Trail>,
}

impl Strict<'_> {
    /// On the way out of a failed child: adds `part` to the trail when the failure is a repeated
    /// key.
    fn mark(self, part: impl FnOnce() -> String) {
        if let Some(trail) = self.trail
            && let Some(parts) = trail.borrow_mut().as_mut()
        {
            parts.push(part());
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(Value::Array(items)),
                Err(error) => {
                    let index = items.len();
                    self.mark(|| format!("[{index}]"));
                    return Err(error);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match map.next_value_seed(self) {
                Ok(value) => value,
                Err(error) => {
                    self.mark(|| key.clone());
                    return Err(error);
                }
            };
            match object.entry(key) {
                serde_json::map::Entry::Occupied(entry) => {
                    if let Some(trail) = self.trail {
                        *trail.borrow_mut() = Some(vec![entry.key().clone()]);
                    }
                    return Err(de::Error::custom(format!("duplicate key `{}`", entry.key())));
                }
                serde_json::map::Entry::Vacant(entry) => entry.insert(value),
            };
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(text: &str) -> DuplicateKey {
        parse(text).expect_err("a repeated key").expect("a repeated key, not a syntax error")
    }

    #[test]
    fn values_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a":1,"b":[1,-2,3.5,1e300,null,true,"x\u00e9"],"c":{"d":{}},"e":18446744073709551615}"#,
            "[]",
            "\"s\"",
            "-0.0",
        ] {
            assert_eq!(parse(text).unwrap(), serde_json::from_str::<Value>(text).unwrap(), "{text}");
        }
    }

    #[test]
    fn a_repeated_key_is_named_with_its_path() {
        assert_eq!(
            duplicate(r#"{"id":"a","prompt":"p","id":"b"}"#),
            DuplicateKey { field: "id".into(), path: "id".into() }
        );
        assert_eq!(duplicate(r#"{"id":"a","meta":{"topic":"x","topic":"y"}}"#).path, "meta.topic");
        let deep = duplicate(r#"{"critiques":[{"score":1},{"dimensions":{"a":1,"a":2}}]}"#);
        assert_eq!((deep.field.as_str(), deep.path.as_str()), ("critiques", "critiques[1].dimensions.a"));
        // The same key in two different objects is not a repeat.
        assert!(parse(r#"{"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]}"#).is_ok());
    }

    #[test]
    fn other_errors_stay_syntax_errors() {
        assert!(parse("{\"a\":1,").unwrap_err().is_err());
        assert!(parse("{\"a\":1} x").unwrap_err().is_err());
        assert!(parse("{\"a\":{\"b\":1,}}").unwrap_err().is_err());
    }

    #[test]
    fn typed_rows_refuse_repeats_too() {
        assert!(serde_json::from_str::<Checked>(r#"{"pass":true,"pass":false}"#).is_err());
        assert_eq!(serde_json::from_str::<Checked>(r#"{"pass":true}"#).unwrap().0, serde_json::json!({"pass": true}));
        #[derive(serde::Deserialize)]
        struct Pool {
            #[serde(deserialize_with = "string_map")]
            evidence: BTreeMap<String, String>,
        }
        assert!(serde_json::from_str::<Pool>(r#"{"evidence":{"d1":"x","d1":"y"}}"#).is_err());
        assert_eq!(serde_json::from_str::<Pool>(r#"{"evidence":{"d1":"x"}}"#).unwrap().evidence["d1"], "x");
    }
}
