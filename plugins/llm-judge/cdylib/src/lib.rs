//! The `llm-judge` critic (`critbench-llm-judge`) exported as a shared library: the entry point
//! `critbench_critic` (docs/REFERENCE.md, The ABI).

critbench_abi::export_critic!(critic::LlmJudge);
