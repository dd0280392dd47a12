//! critbench's integration tests: the real binary on fixtures, one module per command or concern.
//!
//! One binary for the whole crate: linking one test executable instead of one per file is
//! most of what building the tests costs on a small machine.

#[path = "../common/mod.rs"]
mod common;

mod adjudicate;
mod cdp;
mod chaos;
mod command_critics;
mod compare;
mod concurrency;
mod config_comparisons;
mod docs;
mod endpoints;
mod errors;
mod evaluators;
mod experiment_parser;
mod gold;
mod html;
mod init;
mod install;
mod interrupt;
mod isolation;
mod isolation_services;
mod judge;
mod judges;
mod kubernetes;
mod langgraph;
mod local_llm;
mod manifest;
mod memory;
mod metered;
mod module_cycles;
mod notebook;
mod offline_honesty;
mod openai;
mod oracle;
mod plugin_info;
mod plugins;
mod power;
mod pricing;
mod program_env;
mod python_module;
mod replay;
mod resample;
mod rescore;
mod run;
mod same_outputs;
mod sequential;
mod shards;
mod show;
mod sim_truth;
mod slurm;
mod stats;
mod task_handles;
mod view;
mod write_failure;
mod writer_programs;
