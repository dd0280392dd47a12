//! Dataset readers: one task per row, in JSONL, CSV or Parquet, chosen by file extension.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use critbench_core::Task;
use serde_json::{Map, Value};

/// What to do with a row that breaks the dataset rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnBadRow {
    /// Stop with an error naming the row (the default).
    #[default]
    Error,
    /// Skip it, count it and go on.
    Skip,
}

/// A row that was skipped under [`OnBadRow::Skip`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SkippedRow {
    pub path: PathBuf,
    /// Line (JSONL, CSV) or 1-based row (Parquet).
    pub row: usize,
    pub reason: String,
}

/// The tasks of one dataset file.
#[derive(Debug)]
pub struct Dataset {
    pub path: PathBuf,
    pub sha256: String,
    pub tasks: Vec<Task>,
    pub skipped: Vec<SkippedRow>,
}

/// Where a dataset went wrong. `row` is a line for JSONL and CSV, a 1-based row for Parquet.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetError {
    pub path: PathBuf,
    pub row: Option<usize>,
    pub field: Option<String>,
    pub message: String,
    row_label: &'static str,
}

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(row) = self.row {
            write!(f, ": {} {row}", self.row_label)?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for DatasetError {}

impl DatasetError {
    fn file(path: &Path, message: impl Into<String>) -> Self {
        DatasetError { path: path.into(), row: None, field: None, message: message.into(), row_label: "line" }
    }
}

/// A problem with one row, before the file and row are attached.
#[derive(Debug, Clone, PartialEq)]
pub struct RowError {
    pub field: Option<String>,
    pub message: String,
}

impl RowError {
    fn field(field: &str, message: impl Into<String>) -> Self {
        RowError { field: Some(field.to_string()), message: message.into() }
    }

    fn row(message: impl Into<String>) -> Self {
        RowError { field: None, message: message.into() }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Jsonl,
    Csv,
    Parquet,
}

/// The fields of SPEC §3.
pub const FIELDS: [&str; 9] = ["id", "prompt", "kind", "context", "evidence", "drafts", "critiques", "labels", "meta"];
/// Fields that hold lists or objects (JSON text in CSV).
const STRUCTURED: [&str; 5] = ["evidence", "drafts", "critiques", "labels", "meta"];

fn format_of(path: &Path) -> Result<Format, DatasetError> {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("jsonl") | Some("ndjson") => Ok(Format::Jsonl),
        Some("csv") => Ok(Format::Csv),
        Some("parquet") => Ok(Format::Parquet),
        _ => Err(DatasetError::file(
            path,
            "unknown dataset format; use a .jsonl, .csv or .parquet file (chosen by extension)",
        )),
    }
}

/// Reads and validates one dataset file. Duplicate ids are always an error.
pub fn read_dataset(path: &Path, on_bad_row: OnBadRow) -> Result<Dataset, DatasetError> {
    let format = format_of(path)?;
    let bytes = std::fs::read(path).map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
    let sha256 = crate::sha256_hex(&bytes);
    let row_label = if format == Format::Parquet { "row" } else { "line" };
    let mut tasks = Vec::new();
    let mut skipped = Vec::new();
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut accept = |row: usize, parsed: Result<Task, RowError>| -> Result<(), DatasetError> {
        let result = parsed.and_then(|task| match first_seen.get(&task.id) {
            Some(first) => Err(RowError::field(
                "id",
                format!("duplicate id `{}` (first on {row_label} {first}); ids must be unique", task.id),
            )),
            None => Ok(task),
        });
        match result {
            Ok(task) => {
                first_seen.insert(task.id.clone(), row);
                tasks.push(task);
                Ok(())
            }
            Err(error) if on_bad_row == OnBadRow::Skip => {
                let field = error.field.map(|f| format!("field `{f}`: ")).unwrap_or_default();
                skipped.push(SkippedRow { path: path.into(), row, reason: format!("{field}{}", error.message) });
                Ok(())
            }
            Err(error) => Err(DatasetError {
                path: path.into(),
                row: Some(row),
                field: error.field,
                message: error.message,
                row_label,
            }),
        }
    };
    match format {
        Format::Jsonl => {
            let text = std::str::from_utf8(&bytes).map_err(|e| DatasetError::file(path, format!("not UTF-8: {e}")))?;
            for (index, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let parsed = serde_json::from_str::<Value>(line)
                    .map_err(|e| RowError::row(format!("invalid JSON: {e}")))
                    .and_then(task_from_value);
                accept(index + 1, parsed)?;
            }
        }
        Format::Csv => read_csv(path, &bytes, &mut accept)?,
        Format::Parquet => read_parquet(path, bytes, &mut accept)?,
    }
    if tasks.is_empty() && skipped.is_empty() {
        return Err(DatasetError::file(path, "the dataset has no rows"));
    }
    Ok(Dataset { path: path.into(), sha256, tasks, skipped })
}

type Accept<'a> = dyn FnMut(usize, Result<Task, RowError>) -> Result<(), DatasetError> + 'a;

fn read_csv(path: &Path, bytes: &[u8], accept: &mut Accept<'_>) -> Result<(), DatasetError> {
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(bytes);
    let headers =
        reader.headers().map_err(|e| DatasetError::file(path, format!("cannot read the CSV header: {e}")))?.clone();
    for (column, name) in headers.iter().enumerate() {
        if !FIELDS.contains(&name) {
            return Err(DatasetError {
                path: path.into(),
                row: Some(1),
                field: Some(name.to_string()),
                message: format!("unknown column (column {}); expected one of: {}", column + 1, FIELDS.join(", ")),
                row_label: "line",
            });
        }
    }
    for record in reader.records() {
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
                accept(line, Err(RowError::row(format!("malformed CSV: {e}"))))?;
                continue;
            }
        };
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        let mut object = Map::new();
        let mut parsed = Ok(());
        for (name, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue;
            }
            let value = if STRUCTURED.contains(&name) {
                match serde_json::from_str::<Value>(cell) {
                    Ok(value) => value,
                    Err(e) => {
                        parsed = Err(RowError::field(name, format!("expected JSON text in this CSV cell: {e}")));
                        break;
                    }
                }
            } else {
                Value::String(cell.to_string())
            };
            object.insert(name.to_string(), value);
        }
        accept(line, parsed.and_then(|_| task_from_value(Value::Object(object))))?;
    }
    Ok(())
}

fn read_parquet(path: &Path, bytes: Vec<u8>, accept: &mut Accept<'_>) -> Result<(), DatasetError> {
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, ArrayRef};
    use arrow_schema::DataType;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let fail = |message: String| DatasetError::file(path, message);
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .map_err(|e| fail(format!("not a readable Parquet file: {e}")))?;
    let schema = builder.schema().clone();
    for field in schema.fields() {
        let name = field.name().as_str();
        if !FIELDS.contains(&name) {
            return Err(fail(format!("unknown column `{name}`; expected one of: {}", FIELDS.join(", "))));
        }
        let supported = match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Null => true,
            DataType::List(item) | DataType::LargeList(item) => {
                name == "drafts" && matches!(item.data_type(), DataType::Utf8 | DataType::LargeUtf8)
            }
            _ => false,
        };
        if !supported {
            return Err(fail(format!(
                "column `{name}` has type {}; use strings (JSON text for evidence, critiques, labels, meta) \
                 or a list of strings for drafts",
                field.data_type()
            )));
        }
    }
    let reader = builder.build().map_err(|e| fail(format!("cannot read Parquet: {e}")))?;
    let string_at = |array: &ArrayRef, i: usize| -> Option<String> {
        if array.is_null(i) {
            return None;
        }
        match array.data_type() {
            DataType::Utf8 => Some(array.as_string::<i32>().value(i).to_string()),
            DataType::LargeUtf8 => Some(array.as_string::<i64>().value(i).to_string()),
            _ => None,
        }
    };
    let mut row = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| fail(format!("cannot read Parquet: {e}")))?;
        for i in 0..batch.num_rows() {
            row += 1;
            let mut object = Map::new();
            let mut parsed = Ok(());
            for (field, column) in schema.fields().iter().zip(batch.columns()) {
                let name = field.name().as_str();
                if column.is_null(i) {
                    continue;
                }
                let value = match column.data_type() {
                    DataType::List(_) | DataType::LargeList(_) => {
                        let items = match column.data_type() {
                            DataType::List(_) => column.as_list::<i32>().value(i),
                            _ => column.as_list::<i64>().value(i),
                        };
                        Value::Array((0..items.len()).filter_map(|j| string_at(&items, j).map(Value::String)).collect())
                    }
                    _ => match string_at(column, i) {
                        Some(text) if STRUCTURED.contains(&name) => match serde_json::from_str(&text) {
                            Ok(value) => value,
                            Err(e) => {
                                parsed = Err(RowError::field(name, format!("expected JSON text: {e}")));
                                break;
                            }
                        },
                        Some(text) => Value::String(text),
                        None => continue,
                    },
                };
                object.insert(name.to_string(), value);
            }
            accept(row, parsed.and_then(|_| task_from_value(Value::Object(object))))?;
        }
    }
    Ok(())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Validates one row (already decoded to JSON) against SPEC §3, naming the field at fault.
pub fn task_from_value(value: Value) -> Result<Task, RowError> {
    let Value::Object(object) = value else {
        return Err(RowError::row(format!("expected a JSON object, found {}", type_name(&value))));
    };
    let mut task = Task::default();
    let (mut has_id, mut has_prompt) = (false, false);
    for (key, value) in object {
        let wrong = |expected: &str| RowError::field(&key, format!("expected {expected}, found {}", type_name(&value)));
        match key.as_str() {
            "id" => match value {
                Value::String(ref s) if !s.trim().is_empty() => {
                    task.id = s.clone();
                    has_id = true;
                }
                Value::String(_) => return Err(RowError::field("id", "must not be empty")),
                _ => return Err(wrong("a string")),
            },
            "prompt" => match value {
                Value::String(s) => {
                    task.prompt = s;
                    has_prompt = true;
                }
                _ => return Err(wrong("a string")),
            },
            "kind" | "context" => match value {
                Value::String(s) => {
                    if key == "kind" {
                        task.kind = Some(s)
                    } else {
                        task.context = Some(s)
                    }
                }
                Value::Null => {}
                _ => return Err(wrong("a string")),
            },
            "evidence" => match value {
                Value::Object(ref pool) => {
                    let mut evidence = BTreeMap::new();
                    for (id, text) in pool {
                        match text {
                            Value::String(text) => evidence.insert(id.clone(), text.clone()),
                            other => {
                                return Err(RowError::field(
                                    "evidence",
                                    format!("evidence `{id}` must be a string, found {}", type_name(other)),
                                ));
                            }
                        };
                    }
                    task.evidence = evidence;
                }
                Value::Null => {}
                _ => return Err(wrong("an object of id → text")),
            },
            "drafts" => match value {
                Value::Array(ref items) => {
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            Value::String(s) => task.drafts.push(s.clone()),
                            other => {
                                return Err(RowError::field(
                                    "drafts",
                                    format!("drafts[{i}] must be a string, found {}", type_name(other)),
                                ));
                            }
                        }
                    }
                }
                Value::Null => {}
                _ => return Err(wrong("a list of strings")),
            },
            "critiques" => match value {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if !item.is_object() {
                            return Err(RowError::field(
                                "critiques",
                                format!("critiques[{i}] must be a critique object, found {}", type_name(item)),
                            ));
                        }
                    }
                    task.critiques = items;
                }
                Value::Null => {}
                _ => return Err(wrong("a list of critique objects")),
            },
            "labels" => task.labels = (!value.is_null()).then_some(value),
            "meta" => match value {
                Value::Object(_) => task.meta = Some(value),
                Value::Null => {}
                _ => return Err(wrong("an object")),
            },
            other => {
                return Err(RowError::field(
                    other,
                    format!("unknown field; expected one of: {} (put extra data under `meta`)", FIELDS.join(", ")),
                ));
            }
        }
    }
    if !has_id {
        return Err(RowError::field("id", "missing (a unique, non-empty string is required)"));
    }
    if !has_prompt {
        return Err(RowError::field("prompt", "missing (a string is required)"));
    }
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
        path
    }

    fn error(name: &str, text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, name, text);
        read_dataset(&path, OnBadRow::Error).unwrap_err().to_string().replace(&dir.path().display().to_string(), "DIR")
    }

    #[test]
    fn reads_jsonl_with_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            &dir,
            "a.jsonl",
            concat!(
                r#"{"id":"a","prompt":"p","kind":"rag","context":"c","evidence":{"d1":"x"},"drafts":["d0"],"#,
                r#""critiques":[{"score":5}],"labels":[{"pass":true}],"meta":{"difficulty":0.5}}"#,
                "\n\n",
                r#"{"id":"b","prompt":"q"}"#
            ),
        );
        let dataset = read_dataset(&path, OnBadRow::Error).unwrap();
        assert_eq!(dataset.tasks.len(), 2);
        let a = &dataset.tasks[0];
        assert_eq!(a.evidence["d1"], "x");
        assert_eq!(a.drafts, ["d0"]);
        assert_eq!(a.meta_number("difficulty"), Some(0.5));
        assert_eq!(dataset.sha256.len(), 64);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        assert_eq!(
            error("d.jsonl", r#"{"prompt":"p"}"#),
            "DIR/d.jsonl: line 1: field `id`: missing (a unique, non-empty string is required)"
        );
        assert_eq!(
            error("d.jsonl", "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"b\"}"),
            "DIR/d.jsonl: line 2: field `prompt`: missing (a string is required)"
        );
        assert_eq!(
            error("d.jsonl", r#"{"id":5,"prompt":"p"}"#),
            "DIR/d.jsonl: line 1: field `id`: expected a string, found a number"
        );
        assert!(
            error("d.jsonl", "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"a\",\"prompt\":\"p\"}")
                .starts_with("DIR/d.jsonl: line 2: field `id`: duplicate id `a` (first on line 1)")
        );
        assert!(error("d.jsonl", "{not json").starts_with("DIR/d.jsonl: line 1: invalid JSON"));
        assert!(
            error("d.jsonl", r#"{"id":"a","prompt":"p","colour":"red"}"#)
                .starts_with("DIR/d.jsonl: line 1: field `colour`: unknown field")
        );
        assert_eq!(
            error("d.jsonl", r#"{"id":"a","prompt":"p","drafts":["x",3]}"#),
            "DIR/d.jsonl: line 1: field `drafts`: drafts[1] must be a string, found a number"
        );
        assert!(error("d.txt", "").contains("unknown dataset format"));
        assert_eq!(error("d.jsonl", "\n"), "DIR/d.jsonl: the dataset has no rows");
    }

    #[test]
    fn skip_mode_counts_bad_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            &dir,
            "d.jsonl",
            "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"b\"}\n{\"id\":\"a\",\"prompt\":\"p\"}\n",
        );
        let dataset = read_dataset(&path, OnBadRow::Skip).unwrap();
        assert_eq!(dataset.tasks.len(), 1);
        assert_eq!(dataset.skipped.iter().map(|s| s.row).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn reads_csv_with_json_cells() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            &dir,
            "d.csv",
            "id,prompt,kind,evidence,drafts\na,Say hi,rag,\"{\"\"d1\"\":\"\"x\"\"}\",\"[\"\"one\"\",\"\"two\"\"]\"\nb,Other,,,\n",
        );
        let dataset = read_dataset(&path, OnBadRow::Error).unwrap();
        assert_eq!(dataset.tasks[0].drafts, ["one", "two"]);
        assert_eq!(dataset.tasks[0].evidence["d1"], "x");
        assert_eq!(dataset.tasks[1].kind, None);
        assert_eq!(
            error("d.csv", "id,prompt,size\na,b,3\n"),
            "DIR/d.csv: line 1: field `size`: unknown column (column 3); expected one of: id, prompt, kind, context, evidence, drafts, critiques, labels, meta"
        );
        assert!(
            error("d.csv", "id,prompt,meta\na,b,{oops\n")
                .starts_with("DIR/d.csv: line 2: field `meta`: expected JSON text")
        );
    }

    #[test]
    fn reads_parquet_with_string_and_list_columns() {
        use arrow_array::builder::{ListBuilder, StringBuilder};
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        use std::sync::Arc;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        let mut drafts = ListBuilder::new(StringBuilder::new());
        drafts.values().append_value("first");
        drafts.append(true);
        drafts.append(false);
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
            ("prompt", Arc::new(StringArray::from(vec!["p", "q"])) as ArrayRef),
            ("meta", Arc::new(StringArray::from(vec![Some(r#"{"k":1}"#), None])) as ArrayRef),
            ("drafts", Arc::new(drafts.finish()) as ArrayRef),
        ])
        .unwrap();
        let file = std::fs::File::create(&path).unwrap();
        // Snappy: what pandas and pyarrow write by default.
        let properties = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let dataset = read_dataset(&path, OnBadRow::Error).unwrap();
        assert_eq!(dataset.tasks[0].drafts, ["first"]);
        assert_eq!(dataset.tasks[0].meta_number("k"), Some(1.0));
        assert!(dataset.tasks[1].drafts.is_empty());
    }
}
