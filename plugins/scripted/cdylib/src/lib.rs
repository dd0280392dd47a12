//! The `scripted` critic (`critbench-scripted`) exported as a shared library: `critbench_critic_v2`,
//! `critbench_critic_v1` and `critbench_critic_info_v1` (docs/REFERENCE.md, Plugin ABI).

critbench_abi::export_task_critic!(critic::Scripted);
