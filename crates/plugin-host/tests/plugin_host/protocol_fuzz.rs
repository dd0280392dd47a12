//! Fuzzing the host's side of the stdio protocol's simple form: a command critic writes whatever
//! bytes each request asks for (hex in the draft) as its answer. Whatever they are, the host never
//! panics, takes a critique only from a well-formed `{"id": N, "critique": ...}` line with the
//! request's own id and nothing else, and a call after garbage gets a working critic again (a stray
//! line costs at most one more attempt).

use std::path::Path;
use std::time::Duration;

use critbench_plugin_host::{CriticInstance, CriticSource, Isolation, IsolationMode, SearchPath, open_critic};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Answers a request whose draft is `fine` with a critique, any other with the bytes its draft
/// spells in hex.
const ECHO: &str = r#"
import json, sys
out = sys.stdout.buffer
out.write(b'{"protocol": 2, "name": "echo", "version": "1", "score_range": [0, 10]}\n'); out.flush()
sys.stdin.readline()
out.write(b'{"id": 0, "ok": true}\n'); out.flush()
for line in sys.stdin:
    message = json.loads(line)
    draft = message["request"]["draft"]
    if draft == "fine":
        out.write(b'{"id": %d, "critique": {"score": 5}}\n' % message["id"])
    else:
        out.write(bytes.fromhex(draft) + b"\n")
    out.flush()
"#;

fn open(dir: &Path) -> CriticInstance {
    std::fs::write(dir.join("echo.py"), ECHO).unwrap();
    let isolation = Isolation {
        mode: IsolationMode::Process,
        // Only blank lines are no answer at all: the timeout ends the wait.
        timeout: Duration::from_secs(2),
        memory_mb: Some(1024),
        children: 1,
        worker: None,
        env: Vec::new(),
    };
    let source = CriticSource::Command(vec!["python3".into(), "echo.py".into()]);
    let host = std::sync::Arc::new(critbench_plugin_host::services::Host::new());
    open_critic(&source, "{}", &SearchPath::default(), Some(dir), &isolation, &host).unwrap()
}

fn request(draft: &str) -> String {
    serde_json::json!({"request_version": 1, "round": 0, "draft": draft, "task": {"id": "t", "prompt": "p"}})
        .to_string()
}

/// Bytes near the protocol: fragments of valid messages (with the first request's id, 1, another
/// id, or none), JSON, UTF-8 and not, newlines.
fn answer_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{\"critique\": {\"score\": 5}}".to_vec()),
        Just(b"{\"id\": 1, \"critique\": {\"score\": 5}}".to_vec()),
        Just(b"{\"id\": 1, \"critique\": {\"score\": 5}, \"error\": \"both\"}".to_vec()),
        Just(b"{\"id\": 0, \"critique\": {\"score\": 4}}".to_vec()),
        Just(b"{\"id\": \"1\", \"critique\": {\"score\": 4}}".to_vec()),
        Just(b"{\"id\": 1, \"error\": \"no\"}".to_vec()),
        Just(b"{\"id\": 1, \"service\": \"nothing\", \"request\": \"{}\"}".to_vec()),
        Just(b"{\"critique\": \"{\\\"score\\\": 3}\"}".to_vec()),
        Just(b"{\"error\": \"no\"}".to_vec()),
        Just(b"{\"service\": \"nothing\", \"request\": \"{}\"}".to_vec()),
        Just(b"{\"critique\": ".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"[1, 2]".to_vec()),
        Just(b"null".to_vec()),
        prop::collection::vec(any::<u8>(), 0..40),
        "\\PC{0,20}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(piece, 1..4).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_answer_is_a_critique_an_error_or_a_restart(bytes in answer_bytes()) {
        let dir = tempfile::tempdir().unwrap();
        let critic = open(dir.path());
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let lines: Vec<&[u8]> =
            bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).collect();
        match critic.call(&request(&hex)) {
            Ok(critique) => {
                // Only from a single line that is a JSON object with a `critique`.
                prop_assert_eq!(lines.len(), 1);
                let line: serde_json::Value = serde_json::from_slice(lines[0]).unwrap();
                // The first request's own id, and nothing but the critique with it.
                let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
                prop_assert_eq!(&line["id"], &serde_json::json!(1));
                prop_assert_eq!(keys.len(), 2);
                // The critique as the critic wrote it (a string critique: the string's content).
                #[derive(serde::Deserialize)]
                struct Written<'a> {
                    #[serde(borrow)]
                    critique: &'a serde_json::value::RawValue,
                }
                let written: Written<'_> = serde_json::from_slice(lines[0]).unwrap();
                let expected = match written.critique.get() {
                    string if string.starts_with('"') => serde_json::from_str::<String>(string).unwrap(),
                    raw => raw.to_string(),
                };
                prop_assert_eq!(critique, expected);
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
        // The critic works again: at most one attempt lost to a stray line left in the pipe.
        let again = critic.call(&request("fine")).or_else(|_| critic.call(&request("fine")));
        let again: serde_json::Value = serde_json::from_str(&again.unwrap()).unwrap();
        prop_assert_eq!(again, serde_json::json!({"score": 5}));
    }
}
