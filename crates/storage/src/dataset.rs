//! Dataset readers: one task per row, in JSONL, CSV or Parquet, chosen by file extension.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use critbench_core::{JsonText, Task};

use crate::task_ids::{DuplicateId, TaskIds};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

mod json;

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
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SkippedRow {
    /// The dataset file.
    pub path: PathBuf,
    /// Line (JSONL, CSV) or 1-based row (Parquet).
    pub row: usize,
    /// Why it was skipped: the error it would have been.
    pub reason: String,
}

/// The tasks of one dataset file.
#[derive(Debug)]
pub struct Dataset {
    /// The file.
    pub path: PathBuf,
    /// Its bytes' SHA-256, hex.
    pub sha256: String,
    /// Its tasks, in file order.
    pub tasks: Vec<Task>,
    /// The rows skipped as bad.
    pub skipped: Vec<SkippedRow>,
}

/// Where a dataset went wrong. `row` is a line for JSONL and CSV, a 1-based row for Parquet.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetError {
    /// The file.
    pub path: PathBuf,
    /// The line or row at fault, when one is.
    pub row: Option<usize>,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong, and what would be valid.
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
    /// A file that holds no row at all.
    pub fn empty(path: &Path) -> Self {
        DatasetError::file(path, "the dataset has no rows")
    }

    /// A file whose bytes, as a run read them, are not the bytes it hashed before it began: the
    /// file changed in between. `started` and `read` are the two SHA-256s (hex).
    pub fn changed_while_read(path: &Path, started: &str, read: &str) -> Self {
        let short = |sha: &str| sha[..sha.len().min(12)].to_string();
        DatasetError::file(
            path,
            format!(
                "the file changed while the run read it (sha256 {} when the run began, {} over the bytes it read), so \
                 its rows may come from either version and nothing was summarized; leave the file as it is while a \
                 run reads it, and start the run again with --overwrite",
                short(started),
                short(read)
            ),
        )
    }

    fn file(path: &Path, message: impl Into<String>) -> Self {
        DatasetError { path: path.into(), row: None, field: None, message: message.into(), row_label: "line" }
    }
}

/// A problem with one row, before the file and row are attached.
#[derive(Debug, Clone, PartialEq)]
pub struct RowError {
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong, and what would be valid.
    pub message: String,
}

impl From<DuplicateId> for RowError {
    fn from(duplicate: DuplicateId) -> RowError {
        RowError::field("id", duplicate.to_string())
    }
}

impl From<json::DuplicateKey> for RowError {
    fn from(duplicate: json::DuplicateKey) -> RowError {
        RowError::field(&duplicate.field, duplicate.message())
    }
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

/// The fields of a dataset row (docs/REFERENCE.md, Dataset).
pub const FIELDS: [&str; 10] =
    ["id", "prompt", "kind", "context", "evidence", "drafts", "samples", "critiques", "labels", "meta"];
/// Fields that hold lists or objects (JSON text in CSV).
const STRUCTURED: [&str; 6] = ["evidence", "drafts", "samples", "critiques", "labels", "meta"];

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

/// Reads and validates one whole dataset file into memory. Duplicate ids are always an error.
/// Runs stream their datasets with [`DatasetStream`] instead; this is for small labeled sets.
pub fn read_dataset(path: &Path, on_bad_row: OnBadRow) -> Result<Dataset, DatasetError> {
    let mut datasets = read_datasets(&[path.to_path_buf()], on_bad_row)?;
    Ok(datasets.pop().expect("one dataset per path"))
}

/// Reads and validates whole dataset files into memory, in order. A duplicate id, within a file
/// or across files, is a bad row.
pub fn read_datasets(paths: &[PathBuf], on_bad_row: OnBadRow) -> Result<Vec<Dataset>, DatasetError> {
    let mut ids = TaskIds::new();
    let mut datasets = Vec::with_capacity(paths.len());
    for (file, path) in paths.iter().enumerate() {
        let mut stream = DatasetStream::open(path)?;
        let row_label = stream.row_label();
        let mut tasks = Vec::new();
        let mut skipped = Vec::new();
        while let Some(block) = stream.next_block(4096)? {
            for (row, parsed) in block.parse() {
                match parsed.and_then(|task| {
                    ids.admit(&task.id, file, row, row_label, paths).map(|()| task).map_err(RowError::from)
                }) {
                    Ok(task) => tasks.push(task),
                    Err(error) if on_bad_row == OnBadRow::Skip => skipped.push(stream.skipped(row, error)),
                    Err(error) => return Err(stream.row_error(row, error)),
                }
            }
        }
        let sha256 = stream.finish()?;
        if tasks.is_empty() && skipped.is_empty() {
            return Err(DatasetError::empty(path));
        }
        datasets.push(Dataset { path: path.clone(), sha256, tasks, skipped });
    }
    Ok(datasets)
}

/// A dataset file read a block of rows at a time, hashing its bytes as they go by.
///
/// JSONL blocks are handed out as raw lines, so that callers can parse several blocks in
/// parallel ([`RowBlock::parse`]); CSV and Parquet rows are decoded here, in file order.
pub struct DatasetStream {
    path: PathBuf,
    reader: Reader,
    /// Rows (lines for JSONL and CSV) handed out so far.
    rows: usize,
    /// Bytes of the file consumed so far (exact for JSONL; by row group for Parquet).
    position: u64,
    size: u64,
}

enum Reader {
    Jsonl {
        input: std::io::BufReader<std::fs::File>,
        sha: sha2::Sha256,
        /// The last block's size: the next one is allocated at once rather than grown.
        block_bytes: usize,
    },
    Csv {
        records: csv::Reader<HashingReader>,
        headers: csv::StringRecord,
    },
    Parquet {
        batches: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
        schema: arrow_schema::SchemaRef,
        /// From the footer: progress in a Parquet file is by rows.
        total_rows: usize,
    },
}

/// Rows of a dataset file, in file order; JSONL rows are not parsed yet.
pub struct RowBlock {
    rows: BlockRows,
}

enum BlockRows {
    /// Whole lines (without their newline), numbered from `first_line`.
    Jsonl {
        text: Vec<u8>,
        ends: Vec<u32>,
        first_line: usize,
    },
    Parsed(Vec<(usize, Result<Task, RowError>)>),
}

impl RowBlock {
    /// Validates every row of the block: `(line or row number, task or what is wrong)`. Blank
    /// JSONL lines are not rows.
    pub fn parse(self) -> Vec<(usize, Result<Task, RowError>)> {
        match self.rows {
            BlockRows::Parsed(rows) => rows,
            BlockRows::Jsonl { text, ends, first_line } => {
                let mut rows = Vec::with_capacity(ends.len());
                let mut start = 0usize;
                for (index, &end) in ends.iter().enumerate() {
                    let line = &text[start..end as usize];
                    start = end as usize;
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let parsed = std::str::from_utf8(line)
                        .map_err(|e| RowError::row(format!("not UTF-8: {e}")))
                        .and_then(task_from_line);
                    rows.push((first_line + index, parsed));
                }
                rows
            }
        }
    }
}

/// Hashes what the CSV reader reads.
struct HashingReader {
    file: std::fs::File,
    sha: sha2::Sha256,
    read: u64,
}

impl std::io::Read for HashingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.file.read(buf)?;
        self.sha.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

/// Largest JSONL block in bytes: a block also ends at the row count the caller asks for.
const MAX_BLOCK_BYTES: usize = 4 << 20;

/// Refuses a dataset that is not a regular file (a named pipe, a device, a directory): a run reads
/// its datasets more than once (to hash them, then for their rows, and again on `--resume`), and a
/// pipe gives its bytes only once. Checked without opening it, as opening a pipe waits for a writer.
pub fn check_regular(path: &Path) -> Result<(), DatasetError> {
    match std::fs::metadata(path) {
        Ok(metadata) if !metadata.is_file() => Err(DatasetError::file(
            path,
            "is not a regular file (a named pipe, device or directory); a run reads its datasets more than once, \
             so write the rows to a file and give that file",
        )),
        // A missing file is reported by whoever opens it, with the system's reason.
        _ => Ok(()),
    }
}

impl DatasetStream {
    /// Opens a dataset file and checks what can be checked before any row: that it is a regular
    /// file, the format, the CSV header, the Parquet schema.
    pub fn open(path: &Path) -> Result<DatasetStream, DatasetError> {
        let format = format_of(path)?;
        check_regular(path)?;
        let file = std::fs::File::open(path).map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let reader = match format {
            Format::Jsonl => Reader::Jsonl {
                input: std::io::BufReader::with_capacity(1 << 20, file),
                sha: Default::default(),
                block_bytes: 0,
            },
            Format::Csv => {
                let hashing = HashingReader { file, sha: Default::default(), read: 0 };
                let mut records = csv::ReaderBuilder::new().flexible(false).from_reader(hashing);
                let headers = records
                    .headers()
                    .map_err(|e| DatasetError::file(path, format!("cannot read the CSV header: {e}")))?
                    .clone();
                for (column, name) in headers.iter().enumerate() {
                    if let Some(first) = headers.iter().take(column).position(|earlier| earlier == name) {
                        return Err(DatasetError {
                            path: path.into(),
                            row: Some(1),
                            field: Some(name.to_string()),
                            message: format!(
                                "the header names this column twice (columns {} and {}); give each column once",
                                first + 1,
                                column + 1
                            ),
                            row_label: "line",
                        });
                    }
                    if !FIELDS.contains(&name) {
                        return Err(DatasetError {
                            path: path.into(),
                            row: Some(1),
                            field: Some(name.to_string()),
                            message: format!(
                                "unknown column (column {}); expected one of: {}",
                                column + 1,
                                FIELDS.join(", ")
                            ),
                            row_label: "line",
                        });
                    }
                }
                Reader::Csv { records, headers }
            }
            Format::Parquet => {
                let (batches, schema, total_rows) = open_parquet(path, file)?;
                Reader::Parquet { batches, schema, total_rows }
            }
        };
        Ok(DatasetStream { path: path.into(), reader, rows: 0, position: 0, size })
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size in bytes, and how far into it the rows handed out so far reach.
    pub fn progress(&self) -> (u64, u64) {
        (self.position.min(self.size), self.size)
    }

    /// What a row number means in messages: `line` (JSONL, CSV) or `row` (Parquet).
    pub fn row_label(&self) -> &'static str {
        match self.reader {
            Reader::Parquet { .. } => "row",
            _ => "line",
        }
    }

    /// The error for a bad row of this file.
    pub fn row_error(&self, row: usize, error: RowError) -> DatasetError {
        DatasetError {
            path: self.path.clone(),
            row: Some(row),
            field: error.field,
            message: error.message,
            row_label: self.row_label(),
        }
    }

    /// The record of a bad row skipped under [`OnBadRow::Skip`].
    pub fn skipped(&self, row: usize, error: RowError) -> SkippedRow {
        let field = error.field.map(|f| format!("field `{f}`: ")).unwrap_or_default();
        SkippedRow { path: self.path.clone(), row, reason: format!("{field}{}", error.message) }
    }

    /// The next block of at most `max_rows` rows (lines for JSONL, blank lines included), or
    /// `None` at the end of the file. Errors here are the file's (unreadable, not Parquet);
    /// a bad row is reported by [`RowBlock::parse`].
    pub fn next_block(&mut self, max_rows: usize) -> Result<Option<RowBlock>, DatasetError> {
        use std::io::BufRead;
        let max_rows = max_rows.max(1);
        let path = &self.path;
        match &mut self.reader {
            Reader::Jsonl { input, sha, block_bytes } => {
                use sha2::Digest;
                let first_line = self.rows + 1;
                let mut text = Vec::with_capacity(*block_bytes);
                let mut ends = Vec::with_capacity(max_rows.min(1 << 16));
                while ends.len() < max_rows && text.len() < MAX_BLOCK_BYTES {
                    let start = text.len();
                    let read = input
                        .read_until(b'\n', &mut text)
                        .map_err(|e| DatasetError::file(path, format!("cannot read: {e}")))?;
                    if read == 0 {
                        break;
                    }
                    sha.update(&text[start..]);
                    self.position += read as u64;
                    if text.last() == Some(&b'\n') {
                        text.pop();
                        if text.last() == Some(&b'\r') {
                            text.pop();
                        }
                    }
                    ends.push(text.len() as u32);
                }
                if ends.is_empty() {
                    return Ok(None);
                }
                // The next block starts with room for one like this one.
                *block_bytes = text.len() + text.len() / 8;
                self.rows += ends.len();
                Ok(Some(RowBlock { rows: BlockRows::Jsonl { text, ends, first_line } }))
            }
            Reader::Csv { records, headers } => {
                let mut rows = Vec::new();
                let mut record = csv::StringRecord::new();
                while rows.len() < max_rows {
                    match records.read_record(&mut record) {
                        Ok(false) => break,
                        Ok(true) => {
                            let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
                            rows.push((line, csv_task(headers, &record)));
                        }
                        Err(e) => {
                            let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
                            if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                                return Err(DatasetError::file(path, format!("cannot read: {e}")));
                            }
                            rows.push((line, Err(RowError::row(format!("malformed CSV: {e}")))));
                        }
                    }
                }
                self.position = records.get_ref().read;
                if rows.is_empty() {
                    return Ok(None);
                }
                self.rows += rows.len();
                Ok(Some(RowBlock { rows: BlockRows::Parsed(rows) }))
            }
            Reader::Parquet { batches, schema, total_rows } => {
                let Some(batch) = batches.next() else { return Ok(None) };
                let batch = batch.map_err(|e| DatasetError::file(path, format!("cannot read Parquet: {e}")))?;
                let rows = parquet_tasks(schema, &batch, self.rows);
                self.rows += rows.len();
                self.position = (self.size as f64 * self.rows as f64 / (*total_rows).max(1) as f64) as u64;
                Ok(Some(RowBlock { rows: BlockRows::Parsed(rows) }))
            }
        }
    }

    /// Ends the stream and returns the SHA-256 of the whole file. For JSONL and CSV the bytes
    /// were hashed as they were read (the rest of the file, if the caller stopped early, is
    /// hashed now); Parquet, read by row group, is hashed in one sequential pass here.
    pub fn finish(self) -> Result<String, DatasetError> {
        use sha2::Digest;
        use std::io::Read;
        let path = self.path;
        let fail = |e: std::io::Error| DatasetError::file(&path, format!("cannot read: {e}"));
        let (sha, mut rest): (sha2::Sha256, Box<dyn Read>) = match self.reader {
            Reader::Jsonl { input, sha, .. } => (sha, Box::new(input)),
            Reader::Csv { records, .. } => {
                let hashing = records.into_inner();
                // The CSV reader buffers ahead: what it read is already hashed.
                (hashing.sha, Box::new(hashing.file))
            }
            Reader::Parquet { .. } => (Default::default(), Box::new(std::fs::File::open(&path).map_err(fail)?)),
        };
        let mut sha = sha;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = rest.read(&mut buffer).map_err(fail)?;
            if n == 0 {
                break;
            }
            sha.update(&buffer[..n]);
        }
        Ok(critbench_core::hex(&sha.finalize()))
    }
}

fn csv_task(headers: &csv::StringRecord, record: &csv::StringRecord) -> Result<Task, RowError> {
    let mut object = Map::new();
    for (name, cell) in headers.iter().zip(record.iter()) {
        if cell.is_empty() {
            continue;
        }
        let value = if STRUCTURED.contains(&name) {
            json::parse(cell).map_err(|error| match error {
                Ok(duplicate) => RowError::from(duplicate.inside(name)),
                Err(e) => RowError::field(name, format!("expected JSON text in this CSV cell: {e}")),
            })?
        } else {
            Value::String(cell.to_string())
        };
        object.insert(name.to_string(), value);
    }
    task_from_value(Value::Object(object))
}

fn open_parquet(
    path: &Path,
    file: std::fs::File,
) -> Result<(parquet::arrow::arrow_reader::ParquetRecordBatchReader, arrow_schema::SchemaRef, usize), DatasetError> {
    use arrow_schema::DataType;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let fail = |message: String| DatasetError::file(path, message);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| fail(format!("not a readable Parquet file: {e}")))?;
    let schema = builder.schema().clone();
    let total_rows = builder.metadata().file_metadata().num_rows().max(0) as usize;
    for (index, field) in schema.fields().iter().enumerate() {
        let name = field.name().as_str();
        if schema.fields().iter().take(index).any(|earlier| earlier.name() == name) {
            return Err(fail(format!("the schema has two columns named `{name}`; give each column once")));
        }
        if !FIELDS.contains(&name) {
            return Err(fail(format!("unknown column `{name}`; expected one of: {}", FIELDS.join(", "))));
        }
        let supported = match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Null => true,
            DataType::List(item) | DataType::LargeList(item) => {
                (name == "drafts" || name == "samples")
                    && matches!(item.data_type(), DataType::Utf8 | DataType::LargeUtf8)
            }
            _ => false,
        };
        if !supported {
            return Err(fail(format!(
                "column `{name}` has type {}; use strings (JSON text for evidence, critiques, labels, meta) \
                 or a list of strings for drafts and samples",
                field.data_type()
            )));
        }
    }
    let reader = builder.with_batch_size(512).build().map_err(|e| fail(format!("cannot read Parquet: {e}")))?;
    Ok((reader, schema, total_rows))
}

/// The tasks of one Parquet batch; rows are numbered from `rows_before + 1`.
fn parquet_tasks(
    schema: &arrow_schema::SchemaRef,
    batch: &arrow_array::RecordBatch,
    rows_before: usize,
) -> Vec<(usize, Result<Task, RowError>)> {
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, ArrayRef};
    use arrow_schema::DataType;

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
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
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
                    Some(text) if STRUCTURED.contains(&name) => match json::parse(&text) {
                        Ok(value) => value,
                        Err(Ok(duplicate)) => {
                            parsed = Err(duplicate.inside(name).into());
                            break;
                        }
                        Err(Err(e)) => {
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
        rows.push((rows_before + i + 1, parsed.and_then(|_| task_from_value(Value::Object(object)))));
    }
    rows
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

/// A [`Task`] as a JSONL line writes it, for the fast way in: the same fields, with every object
/// checked for a repeated key (a repeated field of the row itself is serde's `duplicate field`).
/// `critiques` and `meta` are kept as the line's text, transcoded once into [`JsonText`].
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Row<'a> {
    id: String,
    prompt: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default, deserialize_with = "json::string_map")]
    evidence: BTreeMap<String, String>,
    #[serde(default)]
    drafts: Vec<String>,
    #[serde(default)]
    samples: Vec<String>,
    #[serde(default, borrow)]
    critiques: Option<&'a RawValue>,
    #[serde(default)]
    labels: Option<json::Checked>,
    #[serde(default, borrow)]
    meta: Option<&'a RawValue>,
}

impl Row<'_> {
    /// The task, or `None` when `critiques` is not a list of objects, `meta` not an object, or
    /// either repeats a key.
    fn into_task(self) -> Option<Task> {
        let critiques = match self.critiques {
            Some(raw) => Some(json::serde_json_text(raw.get(), json::Shape::ListOfObjects)?),
            None => None,
        };
        let meta = match self.meta {
            Some(raw) => Some(json::serde_json_text(raw.get(), json::Shape::Object)?),
            None => None,
        };
        Some(Task {
            id: self.id,
            prompt: self.prompt,
            kind: self.kind,
            context: self.context,
            evidence: self.evidence,
            drafts: self.drafts,
            samples: self.samples,
            critiques: critiques.filter(|list| list != "[]").map(JsonText::from_serde_json_text),
            labels: self.labels.map(|labels| labels.0),
            meta: meta.map(JsonText::from_serde_json_text),
        })
    }
}

/// Validates one JSONL line. Well-formed rows take the fast way, straight into a [`Task`];
/// anything the fast way rejects is decoded again field by field, for a message that names the
/// field at fault.
fn task_from_line(line: &str) -> Result<Task, RowError> {
    if let Ok(row) = serde_json::from_str::<Row>(line)
        && !row.id.trim().is_empty()
        && row.labels.as_ref().is_none_or(|labels| !labels.0.is_null())
        && let Some(task) = row.into_task()
    {
        return Ok(task);
    }
    task_from_text(line)
}

/// The slow way: the line as JSON (a repeated key, at any depth, named with its path), then
/// field by field.
fn task_from_text(line: &str) -> Result<Task, RowError> {
    match json::parse(line) {
        Ok(value) => task_from_value(value),
        Err(Ok(duplicate)) => Err(duplicate.into()),
        Err(Err(e)) => Err(RowError::row(format!("invalid JSON: {e}"))),
    }
}

/// Validates one row (already decoded to JSON) against docs/REFERENCE.md (Dataset), naming the field at fault.
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
            "drafts" | "samples" => match value {
                Value::Array(ref items) => {
                    let list = if key == "drafts" { &mut task.drafts } else { &mut task.samples };
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            Value::String(s) => list.push(s.clone()),
                            other => {
                                return Err(RowError::field(
                                    &key,
                                    format!("{key}[{i}] must be a string, found {}", type_name(other)),
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
                    task.critiques = (!items.is_empty()).then(|| JsonText::from_value(&Value::Array(items)));
                }
                Value::Null => {}
                _ => return Err(wrong("a list of critique objects")),
            },
            "labels" => task.labels = (!value.is_null()).then_some(value),
            "meta" => match value {
                Value::Object(_) => task.meta = Some(JsonText::from_value(&value)),
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
                r#""samples":["s1"],"critiques":[{"score":5}],"labels":[{"pass":true}],"meta":{"difficulty":0.5}}"#,
                "\n\n",
                r#"{"id":"b","prompt":"q"}"#
            ),
        );
        let dataset = read_dataset(&path, OnBadRow::Error).unwrap();
        assert_eq!(dataset.tasks.len(), 2);
        let a = &dataset.tasks[0];
        assert_eq!(a.evidence["d1"], "x");
        assert_eq!(a.drafts, ["d0"]);
        assert_eq!(a.samples, ["s1"]);
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
        assert_eq!(
            error("d.jsonl", r#"{"id":"a","prompt":"p","samples":[true]}"#),
            "DIR/d.jsonl: line 1: field `samples`: samples[0] must be a string, found a boolean"
        );
        assert!(error("d.txt", "").contains("unknown dataset format"));
        assert_eq!(error("d.jsonl", "\n"), "DIR/d.jsonl: the dataset has no rows");
    }

    #[test]
    fn fast_and_field_by_field_decoding_agree() {
        let lines = [
            r#"{"id":"a","prompt":"p"}"#,
            r#"{"id":"a","prompt":"p","kind":null,"context":null,"evidence":null,"drafts":null,"critiques":null,"labels":null,"meta":null}"#,
            r#"{"id":"a","prompt":"p","kind":"rag","evidence":{"d":"x"},"drafts":["d0","d1"],"critiques":[{"score":1}],"labels":[1],"meta":{"k":[1,2]}}"#,
            r#"{"id":"a","prompt":"p","id":"b"}"#,
            r#"{"id":"a","prompt":"p","meta":{"k":1,"k":2}}"#,
            r#"{"id":"a","prompt":"p","evidence":{"d":"x","d":"y"}}"#,
            r#"{"id":"a","prompt":"p","labels":[{"pass":true},{"pass":true,"pass":false}]}"#,
            r#"{"id":" ","prompt":"p"}"#,
            r#"{"id":"a","prompt":"p","critiques":[3]}"#,
            r#"{"id":"a","prompt":"p","meta":[1]}"#,
            r#"{"id":"a","prompt":"p","drafts":["x",3]}"#,
            r#"{"id":"a","prompt":"p","extra":1}"#,
            r#"{"id":"a","prompt":"pé
"}"#,
            r#"[1,2]"#,
        ];
        for line in lines {
            assert_eq!(task_from_line(line), task_from_text(line), "{line}");
        }
    }

    #[test]
    fn a_key_given_twice_is_an_error_naming_line_and_key() {
        assert_eq!(
            error("d.jsonl", "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"b\",\"prompt\":\"p\",\"id\":\"c\"}\n"),
            "DIR/d.jsonl: line 2: field `id`: appears twice in the row; give each field once (JSON readers disagree \
             on which copy wins)"
        );
        assert_eq!(
            error("d.jsonl", r#"{"id":"a","prompt":"p","labels":[{"pass":true,"pass":false}]}"#),
            "DIR/d.jsonl: line 1: field `labels`: key `labels[0].pass` appears twice; give each key of an object \
             once (JSON readers disagree on which copy wins)"
        );
        for (line, path) in [
            (r#"{"id":"a","prompt":"p","meta":{"topic":"x","topic":"y"}}"#, "meta.topic"),
            (r#"{"id":"a","prompt":"p","evidence":{"d1":"x","d1":"y"}}"#, "evidence.d1"),
            (r#"{"id":"a","prompt":"p","critiques":[{"score":1,"score":9}]}"#, "critiques[0].score"),
        ] {
            let message = error("d.jsonl", line);
            assert!(message.contains(&format!("key `{path}` appears twice")), "{message}");
        }
        // The same key in two objects of one row is no repeat.
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, "ok.jsonl", r#"{"id":"a","prompt":"p","meta":{"id":"x"},"labels":{"meta":1}}"#);
        assert_eq!(read_dataset(&path, OnBadRow::Error).unwrap().tasks[0].meta_str("id").as_deref(), Some("x"));
    }

    #[test]
    fn a_csv_column_given_twice_is_an_error_naming_the_header() {
        assert_eq!(
            error("d.csv", "id,prompt,id\na,p,b\n"),
            "DIR/d.csv: line 1: field `id`: the header names this column twice (columns 1 and 3); give each column \
             once"
        );
        assert_eq!(
            error("d.csv", "id,prompt,meta\na,p,\"{\"\"k\"\":1,\"\"k\"\":2}\"\n"),
            "DIR/d.csv: line 2: field `meta`: key `meta.k` appears twice; give each key of an object once (JSON \
             readers disagree on which copy wins)"
        );
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
            "DIR/d.csv: line 1: field `size`: unknown column (column 3); expected one of: id, prompt, kind, context, evidence, drafts, samples, critiques, labels, meta"
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

    #[test]
    fn a_parquet_column_given_twice_is_refused() {
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        use arrow_schema::{DataType, Field, Schema};
        use std::sync::Arc;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        let fields = ["id", "prompt", "id"].map(|name| Field::new(name, DataType::Utf8, true));
        let schema = Arc::new(Schema::new(fields.to_vec()));
        let column = |value: &str| Arc::new(StringArray::from(vec![value])) as ArrayRef;
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![column("a"), column("p"), column("b")]).unwrap();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let message = read_dataset(&path, OnBadRow::Error).unwrap_err().to_string();
        assert!(
            message.ends_with("d.parquet: the schema has two columns named `id`; give each column once"),
            "{message}"
        );

        let cells = dir.path().join("cells.parquet");
        let batch = RecordBatch::try_from_iter([
            ("id", column("a")),
            ("prompt", column("p")),
            ("labels", column(r#"{"flaw":"x","flaw":"y"}"#)),
        ])
        .unwrap();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&cells).unwrap(), batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let message = read_dataset(&cells, OnBadRow::Error).unwrap_err().to_string();
        assert!(message.ends_with("cells.parquet: row 1: field `labels`: key `labels.flaw` appears twice; give each key of an object once (JSON readers disagree on which copy wins)"), "{message}");
    }
}
