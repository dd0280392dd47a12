//! JSON read with every object's keys checked. serde_json keeps the last of a repeated key
//! without a word (and other readers keep the first), so a row such as `{"id": "a", "id": "b"}`
//! or `"labels": {"pass": true, "pass": false}` would be read as one of two different rows. These
//! visitors build the same [`Value`]s as serde_json's own and refuse a key an object already has;
//! the check is the return value of the insert they make anyway, so a row is still parsed once.
//! [`serde_json_text`] writes a value's text in serde_json's form as it reads it, with the same
//! check, for the fields that are only passed on.

use std::borrow::Cow;
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

/// What a transcoded value must be: anything else is refused like a repeated key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An object (a task's `meta`).
    Object,
    /// A list of objects (a task's `critiques`).
    ListOfObjects,
    /// Any value (inside either).
    Any,
}

/// `text` (one JSON value) written as serde_json writes the [`Value`] it parses to (compact, each
/// object's keys sorted, numbers and escapes in serde_json's spelling), without building that
/// value: `None` if the text is not JSON of that shape or an object repeats a key (the row then
/// takes the slow way, which names what is wrong).
pub(crate) fn serde_json_text(text: &str, shape: Shape) -> Option<String> {
    let mut out = Transcoded { text: Vec::with_capacity(text.len()), keys: Vec::new() };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Transcode { out: &mut out, shape }.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(String::from_utf8(out.text).expect("serde_json writes UTF-8"))
}

/// The text written so far, and the keys of the objects still open, each with where its member
/// (`"key":value`) is in the text.
struct Transcoded<'de> {
    text: Vec<u8>,
    keys: Vec<(Cow<'de, str>, std::ops::Range<usize>)>,
}

/// Writes one value as it is read. Every scalar goes through serde_json's own serializer, which
/// is what writes a [`Value`]'s scalars too, so the bytes match.
struct Transcode<'o, 'de> {
    out: &'o mut Transcoded<'de>,
    shape: Shape,
}

impl<'de> Transcode<'_, 'de> {
    fn scalar<T: serde::Serialize + ?Sized, E: de::Error>(self, value: &T) -> Result<(), E> {
        if self.shape != Shape::Any {
            return Err(E::custom("not the expected shape"));
        }
        serde_json::to_writer(&mut self.out.text, value).map_err(E::custom)
    }
}

impl<'de> DeserializeSeed<'de> for Transcode<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.scalar(&value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.scalar(&value)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.scalar(&value)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        // serde_json writes a non-finite number as `null`, as a `Value` holds one.
        self.scalar(&value)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.scalar(value)
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar(&())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar(&())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let item = match self.shape {
            Shape::ListOfObjects => Shape::Object,
            Shape::Any => Shape::Any,
            Shape::Object => return Err(de::Error::custom("not the expected shape")),
        };
        let out = self.out;
        out.text.push(b'[');
        let mut first = true;
        loop {
            if !first {
                out.text.push(b',');
            }
            if seq.next_element_seed(Transcode { out: &mut *out, shape: item })?.is_none() {
                if !first {
                    out.text.pop();
                }
                break;
            }
            first = false;
        }
        out.text.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.shape == Shape::ListOfObjects {
            return Err(de::Error::custom("not the expected shape"));
        }
        let out = self.out;
        out.text.push(b'{');
        let (body, base) = (out.text.len(), out.keys.len());
        let mut sorted = true;
        while let Some(Key(key)) = map.next_key()? {
            if out.keys.len() > base {
                out.text.push(b',');
            }
            let start = out.text.len();
            serde_json::to_writer(&mut out.text, key.as_ref()).map_err(de::Error::custom)?;
            out.text.push(b':');
            map.next_value_seed(Transcode { out: &mut *out, shape: Shape::Any })?;
            if let Some((last, _)) = out.keys[base..].last() {
                match key.as_ref().cmp(last.as_ref()) {
                    std::cmp::Ordering::Equal => return Err(de::Error::custom("a repeated key")),
                    std::cmp::Ordering::Less => sorted = false,
                    std::cmp::Ordering::Greater => {}
                }
            }
            let end = out.text.len();
            out.keys.push((key, start..end));
        }
        if !sorted {
            // Rare (hand-written rows): the members, written in the row's order, are put in order.
            let members = &mut out.keys[base..];
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                return Err(de::Error::custom("a repeated key"));
            }
            let written = out.text.split_off(body);
            for (index, (_, span)) in members.iter().enumerate() {
                if index > 0 {
                    out.text.push(b',');
                }
                out.text.extend_from_slice(&written[span.start - body..span.end - body]);
            }
        }
        out.keys.truncate(base);
        out.text.push(b'}');
        Ok(())
    }
}

/// An object's key, borrowed from the text unless it holds an escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
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
    fn transcoded_text_is_what_serde_json_writes_for_the_value() {
        for text in [
            r#"{ "b" : [1, -2, 3.50, 1e3, -0, null, true, "x\u00e9\/\n\u0001"], "a": {"z": {}, "y": [ ]}, "": 18446744073709551615 }"#,
            r#"[ {"score": 5, "issues": []}, {"b": {"d": 1, "c": 2}, "a": "\ud83d\ude00"} ]"#,
            r#"{"\u0062": 1, "a": 2, "c\"": {"k\\": 0.1}}"#,
            "[]",
            "\"s\"",
            "-0.0",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json_text(text, Shape::Any), Some(value.to_string()), "{text}");
        }
    }

    #[test]
    fn transcoding_refuses_repeated_keys_and_other_shapes() {
        for repeated in
            [r#"{"a":1,"a":2}"#, r#"{"b":1,"a":2,"b":3}"#, r#"{"x":[{"k":1,"j":0,"k":2}]}"#, r#"{"\u0061":1,"a":2}"#]
        {
            assert_eq!(serde_json_text(repeated, Shape::Any), None, "{repeated}");
        }
        assert_eq!(
            serde_json_text(r#"[{"b":1},{"a":[2]}]"#, Shape::ListOfObjects).as_deref(),
            Some(r#"[{"b":1},{"a":[2]}]"#)
        );
        assert_eq!(serde_json_text("[]", Shape::ListOfObjects).as_deref(), Some("[]"));
        assert_eq!(serde_json_text(r#"[{"a":1},3]"#, Shape::ListOfObjects), None);
        assert_eq!(serde_json_text(r#"{"a":1}"#, Shape::ListOfObjects), None);
        assert_eq!(serde_json_text(r#"{"b":[1],"a":{}}"#, Shape::Object).as_deref(), Some(r#"{"a":{},"b":[1]}"#));
        assert_eq!(serde_json_text("[{}]", Shape::Object), None);
        assert_eq!(serde_json_text("\"x\"", Shape::Object), None);
        assert_eq!(serde_json_text("{} x", Shape::Object), None);
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
