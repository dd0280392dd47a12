//! A server's chat answer read off the wire, in OpenAI's form or Ollama's own.

use serde::Deserialize;

use crate::cache::CachedAnswer;

#[derive(Deserialize)]
struct WireAnswer {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    /// `length` when the answer was cut at `max_tokens`.
    #[serde(default)]
    finish_reason: Option<String>,
}

/// The finish reason of an answer cut at its token limit, in OpenAI's form and Ollama's.
const CUT: &str = "length";

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A successful HTTP answer whose body is not a usable chat answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum MalformedAnswer {
    #[error("malformed chat completion ({source}; body starts: {start})")]
    Unparseable { start: String, source: serde_json::Error },
    #[error("a chat completion without choices")]
    NoChoices,
    #[error("a chat completion whose message has no content")]
    NoContent,
    #[error("malformed Ollama chat answer ({source}; body starts: {start})")]
    NativeUnparseable { start: String, source: serde_json::Error },
    #[error("an Ollama chat answer whose message has no content")]
    NativeNoContent,
}

pub(super) fn parse_answer(bytes: &[u8]) -> Result<CachedAnswer, MalformedAnswer> {
    let wire: WireAnswer = serde_json::from_slice(bytes)
        .map_err(|source| MalformedAnswer::Unparseable { start: excerpt(&bytes[..bytes.len().min(200)]), source })?;
    let choice = wire.choices.into_iter().next().ok_or(MalformedAnswer::NoChoices)?;
    let content = choice.message.content.ok_or(MalformedAnswer::NoContent)?;
    let usage = wire.usage.unwrap_or_default();
    Ok(CachedAnswer {
        content,
        tokens_in: usage.prompt_tokens,
        tokens_out: usage.completion_tokens,
        cached_in: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
        truncated: choice.finish_reason.as_deref() == Some(CUT),
    })
}

/// Ollama's own chat answer: `{"message": {"content": …}, "prompt_eval_count": n, "eval_count": n,
/// "done_reason": "stop"}` (`length` when cut at `num_predict`).
#[derive(Deserialize)]
struct NativeAnswer {
    message: WireMessage,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    done_reason: Option<String>,
}

pub(super) fn parse_native_answer(bytes: &[u8]) -> Result<CachedAnswer, MalformedAnswer> {
    let wire: NativeAnswer = serde_json::from_slice(bytes).map_err(|source| MalformedAnswer::NativeUnparseable {
        start: excerpt(&bytes[..bytes.len().min(200)]),
        source,
    })?;
    let content = wire.message.content.ok_or(MalformedAnswer::NativeNoContent)?;
    Ok(CachedAnswer {
        content,
        tokens_in: wire.prompt_eval_count,
        tokens_out: wire.eval_count,
        cached_in: None,
        truncated: wire.done_reason.as_deref() == Some(CUT),
    })
}

/// The first 300 characters of a body, on one line.
pub(super) fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 300 { format!("{}…", line.chars().take(300).collect::<String>()) } else { line }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_and_without_usage() {
        let answer = parse_answer(
            br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
        )
        .unwrap();
        assert_eq!((answer.content.as_str(), answer.tokens_in, answer.tokens_out), ("hi", Some(5), Some(2)));
        assert_eq!(parse_answer(br#"{"choices":[{"message":{"content":"x"}}]}"#).unwrap().tokens_in, None);
        // Cut at max_tokens: said by the finish reason, whatever the text.
        let cut = br#"{"choices":[{"message":{"content":"{\"dim"},"finish_reason":"length"}]}"#;
        assert!(parse_answer(cut).unwrap().truncated);
        assert!(
            !parse_answer(br#"{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}"#).unwrap().truncated
        );
        let native = br#"{"message":{"content":"{"},"done":true,"done_reason":"length"}"#;
        assert!(parse_native_answer(native).unwrap().truncated);
        assert!(parse_answer(br#"{"choices":[]}"#).unwrap_err().to_string().contains("without choices"));
        let no_content = parse_answer(br#"{"choices":[{"message":{"content":null}}]}"#).unwrap_err();
        assert!(no_content.to_string().contains("no content"));
        let malformed = parse_answer(b"{\"choices\":[{\"mess").unwrap_err().to_string();
        assert!(
            malformed.starts_with("malformed chat completion") && malformed.contains("body starts: {"),
            "{malformed}"
        );
    }

    #[test]
    fn cached_input_tokens_and_ollamas_own_answers_parse() {
        let answer = parse_answer(
            br#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":50,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":32}}}"#,
        )
        .unwrap();
        assert_eq!((answer.tokens_in, answer.cached_in), (Some(50), Some(32)));
        let native =
            parse_native_answer(br#"{"model":"m","message":{"role":"assistant","content":"{}"},"done":true,"prompt_eval_count":7,"eval_count":3}"#)
                .unwrap();
        assert_eq!((native.content.as_str(), native.tokens_in, native.tokens_out), ("{}", Some(7), Some(3)));
        assert!(
            parse_native_answer(br#"{"choices":[]}"#)
                .unwrap_err()
                .to_string()
                .starts_with("malformed Ollama chat answer")
        );
    }
}
