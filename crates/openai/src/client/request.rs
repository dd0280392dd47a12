//! The request a call sends: its body in OpenAI's form, its seed, and the cache key it is stored
//! under.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cache::CACHE_FORMAT;
use crate::chat::{CallIdentity, ChatRequest};
use crate::settings::{Role, RoleSettings};

/// The seed sent with a request: the role's base seed mixed with the call's identity, in the
/// positive 31-bit range every server accepts.
pub fn request_seed(base: u64, role: Role, identity: &CallIdentity) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(base.to_le_bytes());
    hasher.update(role.as_str().as_bytes());
    hasher.update([0]);
    hasher.update(identity.task_id.as_bytes());
    hasher.update([0]);
    hasher.update(identity.epoch.to_le_bytes());
    hasher.update(identity.round.to_le_bytes());
    hasher.update(identity.attempt.max(1).to_le_bytes());
    let digest = hasher.finalize();
    u64::from(u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff)
}

pub(super) fn request_body(
    settings: &RoleSettings,
    request: &ChatRequest,
    role: Role,
    identity: &CallIdentity,
) -> Value {
    let mut body = json!({
        "model": settings.model,
        "messages": request.messages,
        "temperature": settings.temperature,
        "seed": request_seed(settings.seed, role, identity),
        "stream": false,
    });
    if let Some(max_tokens) = settings.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    if let Some(format) = &request.response_format {
        body["response_format"] = format.clone();
    }
    body
}

/// SHA-256 over the cache format, endpoint, role, the call's identity and the whole request
/// body (model, messages, sampling parameters, response format) as JSON text (`body`, as
/// serde_json writes the request's `Value`).
pub(super) fn cache_key(endpoint: &str, role: Role, identity: &CallIdentity, body: &[u8]) -> String {
    let mut hasher = Sha256::new();
    let identity = json!([
        CACHE_FORMAT,
        endpoint,
        role.as_str(),
        identity.task_id,
        identity.epoch,
        identity.round,
        identity.attempt.max(1)
    ]);
    // Hashed as serialized, without building the texts: this runs once per model call.
    struct Hashing<'a>(&'a mut Sha256);
    impl std::io::Write for Hashing<'_> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Hashing(&mut hasher), &identity).expect("JSON values serialize");
    hasher.update([0]);
    // serde_json's maps are sorted (no preserve_order), so the text is canonical.
    hasher.update(body);
    critbench_core::hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_key_is_the_sha256_of_the_identity_and_the_request_as_json_text() {
        // The key's bytes are what makes a cache file from an earlier run answer this one.
        let identity = CallIdentity { task_id: "t\"1".into(), epoch: 2, round: 1, attempt: 0 };
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "é\n"}], "temperature": 0.5});
        let text = format!("[{CACHE_FORMAT},\"http://x/v1\",\"judge\",\"t\\\"1\",2,1,1]\u{0}{body}");
        let expected: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        let body = serde_json::to_vec(&body).unwrap();
        assert_eq!(cache_key("http://x/v1", Role::Judge, &identity, &body), expected);
    }

    #[test]
    fn seeds_differ_by_epoch_and_attempt_but_not_by_anything_else() {
        let at = |epoch, attempt| CallIdentity { task_id: "t".into(), epoch, round: 0, attempt };
        let seed = |identity: &CallIdentity| request_seed(7, Role::Generator, identity);
        assert_eq!(seed(&at(0, 1)), seed(&at(0, 1)));
        assert_ne!(seed(&at(0, 1)), seed(&at(1, 1)));
        assert_ne!(seed(&at(0, 1)), seed(&at(0, 2)));
        assert!(seed(&at(3, 1)) <= 0x7fff_ffff);
    }
}
