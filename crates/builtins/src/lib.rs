//! The critics compiled into critbench: `rubric`, `evidence`, `scripted`, `llm-judge`, and the
//! `sim-truth` evaluator.
//!
//! Each is registered by the same ABI descriptor its shared library exports
//! (`plugins/NAME/cdylib` builds those), so the host opens a built-in exactly as it opens a
//! loaded library, checks included; only `create` differs, leaving the panic hook (the host's
//! own) alone. A bare plugin name that is a built-in's resolves to it (docs/REFERENCE.md,
//! Plugins); a library of the same name loads by its path.
#![warn(missing_docs)]

use critbench_abi::{CriticDescriptor, CriticPlugin, builtin_descriptor, builtin_task_descriptor};

/// A critic compiled into critbench.
#[derive(Debug)]
pub struct Builtin {
    /// The name experiments use (`plugin = "rubric"`), the descriptor's `name`.
    pub name: &'static str,
    /// What its shared library's entry point (`critbench_critic`) returns, but for `create`'s
    /// panic hook; its info JSON included.
    pub descriptor: &'static CriticDescriptor,
    /// SHA-256 of its source files and the ABI glue, as built: what the manifest records in
    /// place of a library file's hash.
    pub source_sha256: &'static str,
}

static RUBRIC: CriticDescriptor = builtin_descriptor::<critbench_rubric::Rubric>();
static EVIDENCE: CriticDescriptor = builtin_descriptor::<critbench_evidence::EvidenceCritic>();
static SCRIPTED: CriticDescriptor = builtin_task_descriptor::<critbench_scripted::Scripted>();
static LLM_JUDGE: CriticDescriptor = builtin_descriptor::<critbench_llm_judge::LlmJudge>();
static SIM_TRUTH: CriticDescriptor = builtin_descriptor::<critbench_sim_truth::SimTruth>();

/// Every built-in critic, by name.
pub static BUILTINS: [Builtin; 5] = [
    Builtin {
        name: critbench_rubric::Rubric::NAME,
        descriptor: &RUBRIC,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_RUBRIC"),
    },
    Builtin {
        name: critbench_evidence::EvidenceCritic::NAME,
        descriptor: &EVIDENCE,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_EVIDENCE"),
    },
    Builtin {
        name: critbench_scripted::Scripted::NAME,
        descriptor: &SCRIPTED,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_SCRIPTED"),
    },
    Builtin {
        name: critbench_llm_judge::LlmJudge::NAME,
        descriptor: &LLM_JUDGE,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_LLM_JUDGE"),
    },
    Builtin {
        name: critbench_sim_truth::SimTruth::NAME,
        descriptor: &SIM_TRUTH,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_SIM_TRUTH"),
    },
];

/// The built-in critic called `name`, reading `_` as `-` (as library file names do).
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|builtin| builtin.name == name || builtin.name == name.replace('_', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_found_by_its_name_and_its_descriptor_says_the_same_name() {
        for builtin in &BUILTINS {
            let found = find(builtin.name).expect("found by name");
            assert!(std::ptr::eq(found, builtin));
            // SAFETY: static text of the descriptor.
            let name = unsafe { builtin.descriptor.name.as_bytes() };
            assert_eq!(name, builtin.name.as_bytes());
            assert_eq!(builtin.source_sha256.len(), 64, "{}: {}", builtin.name, builtin.source_sha256);
        }
        assert!(find("llm_judge").is_some_and(|b| b.name == "llm-judge"));
        assert!(find("faulty").is_none());
        let hashes: std::collections::BTreeSet<_> = BUILTINS.iter().map(|b| b.source_sha256).collect();
        assert_eq!(hashes.len(), BUILTINS.len(), "each critic's sources hash apart");
    }
}
