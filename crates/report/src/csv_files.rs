//! CSV files of serializable rows, with a header line even when there are no rows.

use std::path::Path;

use serde::Serialize;

use crate::ReportError;

/// The column names a row type serializes to, for a CSV with no rows.
pub(crate) fn headers<T: Serialize + Default>() -> Vec<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(T::default()).expect("a default row serializes");
    let text = String::from_utf8(writer.into_inner().expect("writing to memory cannot fail")).expect("CSV is UTF-8");
    text.lines().next().unwrap_or_default().split(',').map(String::from).collect()
}

pub(crate) fn write_csv<T: Serialize + Default>(path: &Path, rows: &[T]) -> Result<(), ReportError> {
    let failed = |e: csv::Error| ReportError::Write { path: path.into(), source: std::io::Error::other(e.to_string()) };
    let io = |source: std::io::Error| ReportError::Write { path: path.into(), source };
    let file = critbench_storage::files::AtomicFile::create(path).map_err(io)?;
    let mut writer = csv::WriterBuilder::new().has_headers(!rows.is_empty()).from_writer(file);
    if rows.is_empty() {
        writer.write_record(headers::<T>()).map_err(failed)?;
    }
    for row in rows {
        writer.serialize(row).map_err(failed)?;
    }
    writer.into_inner().map_err(|e| io(e.into_error()))?.commit().map_err(io)
}
