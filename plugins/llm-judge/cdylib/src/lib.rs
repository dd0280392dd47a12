//! The `llm-judge` critic (`critbench-llm-judge`) exported as a shared library: `critbench_critic_v1` and
//! `critbench_critic_info_v1` (docs/REFERENCE.md, Plugin ABI).

critbench_abi::export_critic!(critic::LlmJudge);
