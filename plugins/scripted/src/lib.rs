//! The `scripted` critic: returns the critique the dataset scripted for this round
//! (docs/REFERENCE.md, Dataset and Plugins).
//!
//! Round `k` gets `task.critiques[min(k, len - 1)]`, byte for byte as it appears in the request,
//! so a loop with the `scripted` backend and this critic replays exactly and the decision rule can
//! be tested on known score sequences. It is also the critic of the throughput benchmark, so it
//! never builds the task: it borrows the raw JSON text of the one critique it returns. It reads
//! a loop's task once ([`TaskCritic`]), when the host opens it, and each round's request then
//! carries only the round and the draft. The host opens a task's loops (one
//! per arm, config and epoch) one after another on a thread, so each thread keeps the last task it
//! read: a task opened again with the same text shares that reading instead of parsing it again.
//!
//! ```
//! use critbench_abi::{CriticPlugin, Host};
//! use critbench_scripted::Scripted;
//!
//! let critic = Scripted::create("{}", Host::none()).unwrap();
//! let request = r#"{"request_version": 1, "round": 3, "draft": "...",
//!     "task": {"id": "t", "prompt": "p", "critiques": [{"score": 5}, {"score": 8.5}]}}"#;
//! assert_eq!(critic.critique(request).unwrap(), r#"{"score": 8.5}"#);
//! ```

#![warn(missing_docs)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use critbench_abi::{CriticError, CriticPlugin, Host, TaskCritic};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The scripted critic. It has no settings: its config must be `{}`.
#[derive(Debug)]
pub struct Scripted;

/// The parts of a request this critic reads; every other field is skipped without being built.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    task: ScriptedTask<'a>,
    round: u64,
}

#[derive(Deserialize)]
struct ScriptedTask<'a> {
    #[serde(default)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    critiques: Vec<&'a RawValue>,
}

/// The part of a request about an opened task this critic reads.
#[derive(Deserialize)]
struct Round {
    round: u64,
}

/// A task's scripted critiques, kept between the rounds of a loop: their raw JSON texts one after
/// another in one string, each ending where `ends` says.
#[derive(Debug)]
pub struct Script {
    texts: String,
    ends: Vec<usize>,
}

impl Script {
    fn critique(&self, index: usize) -> &str {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.texts[start..self.ends[index]]
    }
}

/// The error for a task that scripts no critique.
fn unscripted(task: &ScriptedTask<'_>) -> CriticError {
    let id = task.id.map_or("(no id)", |id| id.get());
    format!("task {id} has no `critiques` for the scripted critic").into()
}

/// Round `round`'s critique of `count` scripted ones (`count` > 0), read by `critique(index)`.
fn scripted<'a>(count: usize, round: u64, critique: impl Fn(usize) -> &'a str) -> Result<String, CriticError> {
    let index = usize::try_from(round).unwrap_or(usize::MAX).min(count - 1);
    let critique = critique(index);
    // Anything but an object would only fail later in the host with a vaguer message.
    if !critique.starts_with('{') {
        return Err(format!("critiques[{index}] is not a JSON object: {critique}").into());
    }
    Ok(critique.to_owned())
}

impl CriticPlugin for Scripted {
    const NAME: &'static str = "scripted";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = 0.0;
    const SCORE_MAX: f64 = 10.0;
    const THREAD_SAFE: bool = true;

    fn create(config: &str, _host: Host) -> Result<Self, CriticError> {
        let keys: BTreeMap<String, IgnoredAny> = serde_json::from_str(config)
            .map_err(|e| format!("the scripted critic's config must be a JSON object: {e}"))?;
        if keys.is_empty() {
            return Ok(Scripted);
        }
        let named: Vec<String> = keys.keys().map(|key| format!("`{key}`")).collect();
        Err(format!("the scripted critic takes no config, but got {}; use {{}}", named.join(", ")).into())
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        let request: Request = serde_json::from_str(request).map_err(|e| format!("malformed critique request: {e}"))?;
        let critiques = &request.task.critiques;
        if critiques.is_empty() {
            return Err(unscripted(&request.task));
        }
        scripted(critiques.len(), request.round, |index| critiques[index].get())
    }
}

impl Script {
    /// Copies the task's critiques out as they are written; a task without any is refused here,
    /// with the message `critique` gives for it.
    fn read(task: &str) -> Result<Script, CriticError> {
        let task: ScriptedTask = serde_json::from_str(task).map_err(|e| format!("malformed task: {e}"))?;
        if task.critiques.is_empty() {
            return Err(unscripted(&task));
        }
        let mut texts = String::with_capacity(task.critiques.iter().map(|c| c.get().len()).sum());
        let ends = (task.critiques.iter())
            .map(|critique| {
                texts.push_str(critique.get());
                texts.len()
            })
            .collect();
        Ok(Script { texts, ends })
    }
}

thread_local! {
    /// The text of the task this thread read last, and its script. A script depends on the
    /// task's text alone, so an equal text may share it; a task that is refused is not kept.
    static LAST_READ: RefCell<(String, Option<Arc<Script>>)> = const { RefCell::new((String::new(), None)) };
}

impl TaskCritic for Scripted {
    type Task = Arc<Script>;

    /// The task's script, read from its text, or shared with the loop this thread opened before
    /// when that loop's task has the same text.
    fn open_task(&self, task: &str) -> Result<Arc<Script>, CriticError> {
        LAST_READ.with(|last| {
            let mut last = last.borrow_mut();
            let (text, script) = &mut *last;
            if let Some(script) = script.as_ref().filter(|_| text == task) {
                return Ok(Arc::clone(script));
            }
            *script = None;
            let read = Arc::new(Script::read(task)?);
            // One long task must not hold its size on the thread for the rest of the run.
            if text.capacity() > 2 * task.len() + (1 << 16) {
                *text = String::new();
            }
            text.clear();
            text.push_str(task);
            *script = Some(Arc::clone(&read));
            Ok(read)
        })
    }

    fn critique_task(&self, script: &Arc<Script>, request: &str) -> Result<String, CriticError> {
        let round = match round_written_first(request) {
            Some(round) => round,
            None => {
                let request: Round =
                    serde_json::from_str(request).map_err(|e| format!("malformed critique request: {e}"))?;
                request.round
            }
        };
        scripted(script.ends.len(), round, |index| script.critique(index))
    }
}

/// The round of a request about an opened task as critbench writes it,
/// `{"request_version":2,"round":R,"draft":...}`, read from its opening bytes: this critic never
/// reads the draft, so it does not scan it. `None` for a request written any other way, which is
/// then parsed whole.
fn round_written_first(request: &str) -> Option<u64> {
    const OPENING: &str = r#"{"request_version":2,"round":"#;
    const _: () = assert!(critbench_abi::TASK_REQUEST_VERSION == 2, "OPENING names the request version");
    let rest = request.strip_prefix(OPENING)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // One digit or a number without a leading zero, then the next field: a whole JSON number.
    let number = &rest[..digits];
    if digits == 0 || (digits > 1 && number.starts_with('0')) || !rest[digits..].starts_with(",\"") {
        return None;
    }
    number.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn critic() -> Scripted {
        Scripted::create("{}", Host::none()).unwrap()
    }

    fn request(round: u32, critiques: &str) -> String {
        format!(
            r#"{{"request_version": 1, "task": {{"id": "essay-001", "prompt": "Write {{an}} essay",
                "drafts": ["a \"quoted\" draft", "x"], "critiques": {critiques},
                "meta": {{"expect": "pass", "nested": [{{"critiques": []}}]}}}},
               "draft": "The draft \\u00e9 with \"quotes\" and {{braces}}", "round": {round}}}"#
        )
    }

    #[test]
    fn returns_the_critique_of_the_round_verbatim() {
        let critiques = r#"[{"score": 6,   "issues": ["thin \"evidence\""]},
            {"dimensions": {"clarity": 7.5}, "fatal_issues": [], "passed": true}]"#;
        assert_eq!(
            critic().critique(&request(0, critiques)).unwrap(),
            r#"{"score": 6,   "issues": ["thin \"evidence\""]}"#
        );
        assert_eq!(
            critic().critique(&request(1, critiques)).unwrap(),
            r#"{"dimensions": {"clarity": 7.5}, "fatal_issues": [], "passed": true}"#
        );
    }

    #[test]
    fn rounds_past_the_script_repeat_the_last_critique() {
        let critiques = r#"[{"score": 4}, {"score": 7}]"#;
        for round in [2, 3, 100, u32::MAX] {
            assert_eq!(critic().critique(&request(round, critiques)).unwrap(), r#"{"score": 7}"#);
        }
    }

    #[test]
    fn field_order_does_not_matter() {
        let request = r#"{"round": 1, "draft": "d", "task": {"critiques": [{"score": 1}, {"score": 2}], "id": "t"}}"#;
        assert_eq!(critic().critique(request).unwrap(), r#"{"score": 2}"#);
    }

    #[test]
    fn a_task_without_critiques_is_an_error_naming_it() {
        let error = critic().critique(&request(0, "[]")).unwrap_err().to_string();
        assert!(error.contains("\"essay-001\"") && error.contains("critiques"), "{error}");
        let error = critic()
            .critique(r#"{"round": 0, "draft": "", "task": {"id": "t2", "prompt": "p"}}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"t2\""), "{error}");
    }

    #[test]
    fn malformed_requests_and_critiques_are_errors() {
        for bad in ["", "not json", r#"{"task": {"critiques": [{"score": 1}]}}"#, r#"{"round": -1, "task": {}}"#] {
            assert!(critic().critique(bad).unwrap_err().to_string().starts_with("malformed critique request"), "{bad}");
        }
        let error = critic().critique(&request(0, "[7]")).unwrap_err().to_string();
        assert!(error.contains("critiques[0] is not a JSON object"), "{error}");
    }

    #[test]
    fn config_must_be_empty() {
        assert!(Scripted::create(" { } ", Host::none()).is_ok());
        let error = Scripted::create(r#"{"score_max": 5}"#, Host::none()).unwrap_err().to_string();
        assert!(error.contains("`score_max`"), "{error}");
        let error = Scripted::create(r#"{"b": 1, "a": {}}"#, Host::none()).unwrap_err().to_string();
        assert!(error.contains("`a`, `b`"), "{error}");
        assert!(Scripted::create("[]", Host::none()).is_err());
        assert!(Scripted::create("", Host::none()).is_err());
    }

    /// What the critic answers `request` by task: its task opened, then the rest sent.
    fn by_task(request: &str) -> Result<String, String> {
        #[derive(Deserialize)]
        struct Whole<'a> {
            #[serde(borrow)]
            task: &'a RawValue,
            round: u32,
            draft: String,
        }
        let whole: Whole = serde_json::from_str(request).unwrap();
        let script = critic().open_task(whole.task.get()).map_err(|e| e.to_string())?;
        let rest = serde_json::json!({"request_version": 2, "round": whole.round, "draft": whole.draft});
        critic().critique_task(&script, &rest.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_task_opened_once_answers_every_round_as_the_whole_request_does() {
        let critiques = r#"[{"score": 6,   "issues": ["thin \"evidence\""]}, {"score": 7.5}, 7, {"passed": true}]"#;
        for round in [0, 1, 2, 3, 4, 100, u32::MAX] {
            let request = request(round, critiques);
            let whole = critic().critique(&request).map_err(|e| e.to_string());
            assert_eq!(by_task(&request), whole, "round {round}");
        }
        assert!(by_task(&request(2, critiques)).unwrap_err().contains("critiques[2] is not a JSON object"));
        let unscripted = request(0, "[]");
        assert_eq!(by_task(&unscripted), critic().critique(&unscripted).map_err(|e| e.to_string()));
        let script = critic().open_task(r#"{"id": "t", "critiques": [{"score": 1}, {"score": 2}]}"#).unwrap();
        assert_eq!(critic().critique_task(&script, r#"{"draft": "d", "round": 1}"#).unwrap(), r#"{"score": 2}"#);
        for bad in ["", r#"{"draft": "d"}"#, r#"{"round": -1}"#] {
            let error = critic().critique_task(&script, bad).unwrap_err().to_string();
            assert!(error.starts_with("malformed critique request"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_round_read_from_the_opening_is_the_round_the_whole_parse_reads() {
        let script = critic().open_task(r#"{"id": "t", "critiques": [{"score": 1}, {"score": 2}, {"score": 3}]}"#);
        let script = script.expect("a task with critiques opens");
        let draft = r#""a \"draft\" with \u00e9, \"round\":7 and {braces}""#;
        for round in ["0", "1", "2", "9", "10", "4294967295", "18446744073709551615"] {
            let written = format!(r#"{{"request_version":2,"round":{round},"draft":{draft}}}"#);
            assert_eq!(round_written_first(&written), round.parse().ok(), "{written}");
            let parsed: Round = serde_json::from_str(&written).unwrap();
            let full = scripted(script.ends.len(), parsed.round, |index| script.critique(index)).unwrap();
            assert_eq!(critic().critique_task(&script, &written).unwrap(), full, "{written}");
        }
        // Any other shape is left to the whole parse, which takes or refuses it as before.
        for other in [
            r#"{"request_version":2,"round":01,"draft":"d"}"#,
            r#"{"request_version":2,"round":-1,"draft":"d"}"#,
            r#"{"request_version":2,"round":1.5,"draft":"d"}"#,
            r#"{"request_version":2,"round":1e0,"draft":"d"}"#,
            r#"{"request_version":2,"round":1}"#,
            r#"{"request_version":2,"round":18446744073709551616,"draft":"d"}"#,
            r#"{"request_version": 2, "round": 1, "draft": "d"}"#,
            r#"{"request_version":3,"round":1,"draft":"d"}"#,
            r#"{"draft":"d","request_version":2,"round":1}"#,
        ] {
            assert_eq!(round_written_first(other), None, "{other}");
        }
        assert_eq!(critic().critique_task(&script, r#"{"request_version":2,"round":1}"#).unwrap(), r#"{"score": 2}"#);
        let error = critic().critique_task(&script, r#"{"request_version":2,"round":01,"draft":"d"}"#).unwrap_err();
        assert!(error.to_string().starts_with("malformed critique request"), "{error}");
    }

    #[test]
    fn a_task_opened_again_with_the_same_text_shares_its_reading() {
        let a = r#"{"id": "a", "critiques": [{"score": 1}]}"#;
        let b = r#"{"id": "b", "critiques": [{"score": 2}]}"#;
        let first = critic().open_task(a).unwrap();
        assert!(Arc::ptr_eq(&first, &critic().open_task(a).unwrap()), "the next loop of the task");
        let other = critic().open_task(b).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(critic().critique_task(&other, r#"{"round": 0}"#).unwrap(), r#"{"score": 2}"#);
        // The same length, another text: read anew.
        let changed = r#"{"id": "b", "critiques": [{"score": 3}]}"#;
        assert_eq!(changed.len(), b.len());
        let reread = critic().open_task(changed).unwrap();
        assert_eq!(critic().critique_task(&reread, r#"{"round": 0}"#).unwrap(), r#"{"score": 3}"#);
        // A refused task is refused every time, and forgets the task read before it.
        let refused = r#"{"id": "c", "critiques": []}"#;
        for _ in 0..2 {
            assert!(critic().open_task(refused).unwrap_err().to_string().contains("\"c\""));
        }
        assert!(!Arc::ptr_eq(&reread, &critic().open_task(changed).unwrap()));
        // A long task's text is not kept at its size once a short one is read.
        let long = format!(r#"{{"id": "long", "prompt": "{}", "critiques": [{{"score": 4}}]}}"#, "x".repeat(1 << 20));
        critic().open_task(&long).unwrap();
        critic().open_task(a).unwrap();
        assert!(LAST_READ.with(|last| last.borrow().0.capacity()) < 1 << 20);
    }

    #[test]
    fn the_descriptor_works_across_the_c_boundary() {
        use critbench_abi::{ABI_VERSION, Buffer, CriticDescriptor, FLAG_THREAD_SAFE, STATUS_ERROR, STATUS_OK, Str};

        // What critbench registers it by, and (but for the panic hook) what its library exports.
        static DESCRIPTOR: CriticDescriptor = critbench_abi::builtin_task_descriptor::<Scripted>();
        let descriptor = &DESCRIPTOR;
        assert_eq!(descriptor.abi_version, ABI_VERSION);
        assert!(
            descriptor.open_task.is_some() && descriptor.critique_task.is_some() && descriptor.close_task.is_some()
        );
        let (create, critique) = (descriptor.create.expect("set"), descriptor.critique.expect("set"));
        let (destroy, free_buffer) = (descriptor.destroy.expect("set"), descriptor.free_buffer.expect("set"));
        assert_eq!(descriptor.flags, FLAG_THREAD_SAFE);
        // SAFETY: as above.
        assert_eq!(unsafe { descriptor.name.as_bytes() }, b"scripted");
        // SAFETY: as above.
        assert_eq!(unsafe { descriptor.version.as_bytes() }, b"1.0.0");
        assert_eq!((descriptor.score_min, descriptor.score_max), (0.0, 10.0));

        let mut instance = std::ptr::null_mut();
        let mut error = Buffer::EMPTY;
        // SAFETY: valid config text, no host services, valid out-pointers.
        let status = unsafe { create(Str::new("{}"), std::ptr::null(), &mut instance, &mut error) };
        assert_eq!(status, STATUS_OK);

        let call = |request: &str| {
            let mut out = Buffer::EMPTY;
            // SAFETY: `instance` was made by this descriptor's create and is not destroyed yet.
            let status = unsafe { critique(instance, Str::new(request), &mut out) };
            // SAFETY: the plugin filled `out`; copy it, then hand it back to the plugin's free.
            let text = String::from_utf8(unsafe { out.to_vec() }).unwrap();
            // SAFETY: allocated by this plugin, freed once.
            unsafe { free_buffer(out) };
            (status, text)
        };
        assert_eq!(call(&request(5, r#"[{"score": 9}]"#)), (STATUS_OK, r#"{"score": 9}"#.to_string()));
        let (status, message) = call(&request(0, "[]"));
        assert_eq!(status, STATUS_ERROR);
        assert!(message.contains("no `critiques`"), "{message}");
        // SAFETY: made by create above, destroyed once.
        unsafe { destroy(instance) };

        let mut instance = std::ptr::null_mut();
        // SAFETY: as above.
        let status = unsafe { create(Str::new(r#"{"x": 1}"#), std::ptr::null(), &mut instance, &mut error) };
        assert_eq!(status, STATUS_ERROR);
        // SAFETY: the plugin filled `error`.
        let message = String::from_utf8(unsafe { error.to_vec() }).unwrap();
        // SAFETY: allocated by this plugin, freed once.
        unsafe { free_buffer(error) };
        assert!(message.contains("`x`"), "{message}");
    }
}
