//! The critics compiled into critbench: `rubric`, `evidence`, `scripted` and `llm-judge`.
//!
//! Each is registered by the same ABI descriptor its shared library exports
//! (`plugins/NAME/cdylib` builds those), so the host opens a built-in exactly as it opens a
//! loaded library, checks included; only `create` differs, leaving the panic hook (the host's
//! own) alone. A bare plugin name that is a built-in's resolves to it (docs/REFERENCE.md,
//! Plugins); a library of the same name loads by its path.
#![warn(missing_docs)]

use critbench_abi::{
    CriticDescriptorV1, CriticDescriptorV2, CriticPlugin, Descriptor, builtin_descriptor, builtin_descriptor_v2,
};

/// A critic compiled into critbench.
#[derive(Debug)]
pub struct Builtin {
    /// The name experiments use (`plugin = "rubric"`), the descriptor's `name`.
    pub name: &'static str,
    /// What its shared library's entry point returns (`critbench_critic_v2` for a critic of ABI
    /// version 2, else `critbench_critic_v1`), but for `create`'s panic hook.
    pub descriptor: Descriptor,
    /// Its info JSON, what `critbench_critic_info_v1` returns (empty declares nothing).
    pub info: &'static str,
    /// SHA-256 of its source files and the ABI glue, as built: what the manifest records in
    /// place of a library file's hash.
    pub source_sha256: &'static str,
}

static RUBRIC: CriticDescriptorV1 = builtin_descriptor::<critbench_rubric::Rubric>();
static EVIDENCE: CriticDescriptorV1 = builtin_descriptor::<critbench_evidence::EvidenceCritic>();
static SCRIPTED: CriticDescriptorV2 = builtin_descriptor_v2::<critbench_scripted::Scripted>();
static LLM_JUDGE: CriticDescriptorV1 = builtin_descriptor::<critbench_llm_judge::LlmJudge>();

/// Every built-in critic, by name.
pub static BUILTINS: [Builtin; 4] = [
    Builtin {
        name: critbench_rubric::Rubric::NAME,
        descriptor: Descriptor::V1(&RUBRIC),
        info: critbench_rubric::Rubric::INFO,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_RUBRIC"),
    },
    Builtin {
        name: critbench_evidence::EvidenceCritic::NAME,
        descriptor: Descriptor::V1(&EVIDENCE),
        info: critbench_evidence::EvidenceCritic::INFO,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_EVIDENCE"),
    },
    Builtin {
        name: critbench_scripted::Scripted::NAME,
        descriptor: Descriptor::V2(&SCRIPTED),
        info: critbench_scripted::Scripted::INFO,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_SCRIPTED"),
    },
    Builtin {
        name: critbench_llm_judge::LlmJudge::NAME,
        descriptor: Descriptor::V1(&LLM_JUDGE),
        info: critbench_llm_judge::LlmJudge::INFO,
        source_sha256: env!("CRITBENCH_SOURCE_SHA256_LLM_JUDGE"),
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
            let name = match builtin.descriptor {
                Descriptor::V1(descriptor) => descriptor.name,
                Descriptor::V2(descriptor) => descriptor.name,
            };
            // SAFETY: static text of the descriptor.
            let name = unsafe { name.as_bytes() };
            assert_eq!(name, builtin.name.as_bytes());
            assert_eq!(builtin.source_sha256.len(), 64, "{}: {}", builtin.name, builtin.source_sha256);
        }
        assert!(find("llm_judge").is_some_and(|b| b.name == "llm-judge"));
        assert!(find("faulty").is_none());
        let hashes: std::collections::BTreeSet<_> = BUILTINS.iter().map(|b| b.source_sha256).collect();
        assert_eq!(hashes.len(), BUILTINS.len(), "each critic's sources hash apart");
    }
}
