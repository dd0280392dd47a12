//! The files `critbench judge` writes, each named once, and their writing.

use std::path::Path;

use crate::{JudgeError, JudgeReport};

/// The judgment of every critic on every labeled draft.
pub const JUDGMENTS_PARQUET: &str = "judgments.parquet";
/// The whole report as JSON.
pub const JUDGE_JSON: &str = "judge.json";
/// One row per critic.
pub const JUDGE_CSV: &str = "judge.csv";
/// The report in Markdown.
pub const JUDGE_MD: &str = "judge.md";
/// The report in HTML.
pub const JUDGE_HTML: &str = "judge.html";

/// Every file of a critic benchmark's output directory (the run directory's guard reads it).
pub const OUTPUT_FILES: [&str; 5] = [JUDGMENTS_PARQUET, JUDGE_JSON, JUDGE_CSV, JUDGE_MD, JUDGE_HTML];

fn write(path: &Path, text: String) -> Result<(), JudgeError> {
    critbench_storage::files::write_atomically(path, text.as_bytes())
        .map_err(|source| JudgeError::Io { context: format!("cannot write {}", path.display()), source })
}

/// Writes the report's files into `out`.
pub(crate) fn write_files(out: &Path, report: &JudgeReport) -> Result<(), JudgeError> {
    let json = serde_json::to_string_pretty(report).expect("the report serializes");
    write(&out.join(JUDGE_JSON), json + "\n")?;
    let path = out.join(JUDGE_CSV);
    let failed = |e: csv::Error| JudgeError::Io {
        context: format!("cannot write {}", path.display()),
        source: std::io::Error::other(e.to_string()),
    };
    let io = |source: std::io::Error| JudgeError::Io { context: format!("cannot write {}", path.display()), source };
    let mut writer = csv::Writer::from_writer(critbench_storage::files::AtomicFile::create(&path).map_err(io)?);
    for critic in &report.critics {
        writer.serialize(critic).map_err(failed)?;
    }
    writer.into_inner().map_err(|e| io(e.into_error()))?.commit().map_err(io)?;
    write(&out.join(JUDGE_MD), crate::markdown::render(report))?;
    write(&out.join(JUDGE_HTML), crate::html::render(report))
}
