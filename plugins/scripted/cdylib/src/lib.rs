//! The `scripted` critic (`critbench-scripted`) exported as a shared library: the entry point
//! `critbench_critic`, its task functions set (docs/REFERENCE.md, The ABI).

critbench_abi::export_task_critic!(critic::Scripted);
