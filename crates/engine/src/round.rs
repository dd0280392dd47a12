//! One critiqued draft as the tables record it, for the loop's rounds and the adjudicator's.

use critbench_plugin_host::CritiqueCall;
use critbench_plugin_host::services::CallScope;
use critbench_storage::recorded::RecordedRound;

use crate::backend::Draft;

/// A critiqued draft as the tables record it: the critique and its call, the draft (its text only
/// when drafts are stored), the author's and the critic's times (ms) and tokens.
pub(crate) fn recorded_round(
    call: CritiqueCall,
    draft: Draft,
    store_drafts: bool,
    (gen_ms, critic_ms): (f64, f64),
    scope: &CallScope,
) -> RecordedRound {
    RecordedRound {
        critique: call.critique.into(),
        critic_attempts: call.attempts,
        critic_error: call.error,
        draft_chars: draft.text.chars().count() as u64,
        draft: store_drafts.then_some(draft.text),
        gen_ms,
        critic_ms,
        tokens_in: draft.tokens_in,
        tokens_out: draft.tokens_out,
        critic_tokens_in: scope.tokens_in,
        critic_tokens_out: scope.tokens_out,
    }
}
