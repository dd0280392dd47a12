//! The `rubric` critic (`critbench-rubric`) exported as a shared library: the entry point
//! `critbench_critic` (docs/REFERENCE.md, The ABI).

critbench_abi::export_critic!(critic::Rubric);
