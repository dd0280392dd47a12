//! `critbench view RUN`: a run served as plain HTML on 127.0.0.1, for a person to look at what its
//! loops did and to label a sample of its answers.
//!
//! - `/answer` (and `/` without labels): the run's answer as `report.md` opens with it, and every
//!   pass rate by each judge as `summary.csv` holds it, each figure a link to its loops
//!   ([`pages::answer`]).
//! - `/loops`: the loops filtered by arm, config, critic, exit, a judge's verdict and the
//!   interesting sets, paged, with counts ([`pages::loops`] over [`index::LoopIndex`]).
//! - `/task/ID`: a task's loops side by side, round by round, each draft as the words changed since
//!   the one before, its critique beside it ([`pages::task`], read by [`task`]).
//! - `/` with `--labels FILE`: the sampled answers to label, each label written to the file at once
//!   ([`pages::labels`], [`labels`]); `POST /api/label` saves one.
//!
//! The tables are read on demand: a task's page scans the row groups whose `task_id` statistics
//! can hold the task (storage's one scan with a task filter); the lists read an index of a few
//! integers per loop, built once by three column-projected scans on a thread of its own while the
//! other pages already answer. Nothing is written into the run; the labels file is written through
//! the guard of a file of the user's ([`critbench_engine::run_dir::claim_file`]). The style sheet
//! and the script are compiled in; nothing is fetched from the network.
//!
//! ```no_run
//! let viewer = critbench_view::Viewer::open("reports/demo".as_ref(), None)?;
//! let server = critbench_view::Server::bind(viewer, 0)?;
//! println!("{}", server.url());
//! server.serve()?;
//! # Ok::<(), critbench_view::ViewError>(())
//! ```

#![warn(missing_docs)]

mod diff;
mod error;
mod html;
pub mod index;
pub mod labels;
pub mod pages;
mod server;
pub mod task;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use error::ViewError;
pub use server::Server;

use crate::html::{escape, page};
use crate::index::{LoopIndex, Tables};
use crate::labels::LabelFile;

/// A run being viewed: where its tables are, its index (once built) and the labels file.
pub struct Viewer {
    run_dir: PathBuf,
    /// The run's name and id, for the pages' titles.
    name: String,
    trajectories: Vec<PathBuf>,
    evaluations: Vec<PathBuf>,
    index: Arc<OnceLock<Result<LoopIndex, String>>>,
    labels: Option<Mutex<LabelFile>>,
}

/// A page or an answer to a request: its status, type and body.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Reply {
    /// An HTML page.
    pub fn html(status: u16, body: String) -> Reply {
        Reply { status, content_type: "text/html; charset=utf-8", body }
    }

    /// A JSON answer.
    pub fn json(status: u16, body: String) -> Reply {
        Reply { status, content_type: "application/json", body }
    }
}

impl Viewer {
    /// Opens the run in `run_dir` (refused when it is no finished run's directory) and, with
    /// `labels`, the labels file (refused when it is not a sample of this run, or the guard
    /// refuses it); starts building the loop index on a thread of its own.
    pub fn open(run_dir: &Path, labels: Option<&Path>) -> Result<Viewer, ViewError> {
        let outcomes = critbench_report::table_files(run_dir, critbench_storage::shards::OUTCOMES)?;
        let trajectories = critbench_report::table_files(run_dir, "trajectories")?;
        let evaluations = critbench_storage::shards::table_files(run_dir, "evaluations");
        let manifest =
            critbench_storage::manifest::Manifest::read(run_dir).map_err(critbench_report::ReportError::from)?;
        let name = match &manifest {
            Some(m) => format!("{} ({})", m.experiment.name, m.run_id),
            None => run_dir.display().to_string(),
        };
        let labels = labels.map(|path| LabelFile::open(run_dir, path, &evaluations)).transpose()?.map(Mutex::new);
        let index = Arc::new(OnceLock::new());
        let tables = Tables { outcomes, trajectories: trajectories.clone(), evaluations: evaluations.clone() };
        let building = Arc::clone(&index);
        std::thread::spawn(move || {
            let _ = building.set(LoopIndex::build(&tables).map_err(|e| e.to_string()));
        });
        Ok(Viewer { run_dir: run_dir.to_path_buf(), name, trajectories, evaluations, index, labels })
    }

    /// The loop index, once it is built (blocking until then).
    pub fn wait_for_index(&self) -> Result<&LoopIndex, String> {
        while self.index.get().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.index.get().expect("set").as_ref().map_err(Clone::clone)
    }

    /// Answers one request: `method`, `target` (the path and query) and its body.
    pub fn respond(&self, method: &str, target: &str, body: &[u8]) -> Reply {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match (method, path) {
            ("GET", "/") if self.labels.is_some() => self.labels_page(),
            ("GET", "/") | ("GET", "/answer") => self.answer_page(),
            ("GET", "/loops") => self.loops_page(query),
            ("GET", "/assets/view.css") => Reply { status: 200, content_type: "text/css", body: html::CSS.into() },
            ("GET", "/assets/view.js") => Reply { status: 200, content_type: "text/javascript", body: html::JS.into() },
            ("POST", "/api/label") => self.label(body),
            ("GET", path) if path.starts_with("/task/") => self.task_page(&path["/task/".len()..]),
            ("GET", _) => self.page(404, "Not found", "<h1>Not found</h1><p>No such page.</p>".into()),
            _ => Reply::json(405, "{\"error\":\"method not allowed\"}".into()),
        }
    }

    fn page(&self, status: u16, title: &str, body: String) -> Reply {
        Reply::html(status, page(title, &self.name, &body))
    }

    fn answer_page(&self) -> Reply {
        let mut body = format!("<h1>{}</h1>\n<h2>The answer</h2>\n", escape(&self.name));
        match std::fs::read_to_string(self.run_dir.join(critbench_report::outputs::REPORT_MD)) {
            Ok(md) => match pages::answer::answer_section(&md) {
                Some(section) => body.push_str(&pages::answer::render_answer(section)),
                None => body.push_str("<p>report.md has no section “The answer”.</p>"),
            },
            Err(_) => body.push_str(&format!(
                "<p>The run has no report.md: <code>critbench report {}</code> writes it.</p>",
                escape(&self.run_dir.display().to_string())
            )),
        }
        body.push_str("<h2>Pass rates by each judge</h2>\n<p class=\"hint\">Each rate links to the loops the judge passed, each count of loops judged to those loops.</p>\n");
        match pages::answer::read_rates(&self.run_dir) {
            Ok(Some(rows)) => body.push_str(&pages::answer::render_rates(&rows)),
            Ok(None) => body.push_str("<p>The run has no summary.csv.</p>"),
            Err(error) => body.push_str(&format!("<p class=\"error\">{}</p>", escape(&error))),
        }
        body.push_str("<h2>Loops worth a look</h2>\n");
        match self.index.get() {
            Some(Ok(index)) => body.push_str(&pages::answer::render_sets(index)),
            Some(Err(error)) => body.push_str(&format!("<p class=\"error\">{}</p>", escape(error))),
            None => body.push_str(
                "<p class=\"muted\">The loops are being read; <a href=\"/answer\">reload</a> in a moment.</p>",
            ),
        }
        self.page(200, "the answer", body)
    }

    fn loops_page(&self, query: &str) -> Reply {
        let Some(index) = self.index.get() else {
            return self.page(
                503,
                "loops",
                "<meta http-equiv=\"refresh\" content=\"1\"><h1>Loops</h1><p id=\"indexing\">The run's loops are being \
                 read; this page reloads itself.</p>"
                    .into(),
            );
        };
        let index = match index {
            Ok(index) => index,
            Err(error) => return self.page(500, "loops", format!("<p class=\"error\">{}</p>", escape(error))),
        };
        let query = pages::loops::Query::parse(query);
        match pages::loops::render(&query, index) {
            Ok(body) => self.page(200, "loops", body),
            Err(unknown) => self.page(
                400,
                "loops",
                format!(
                    "<h1>Loops</h1><p class=\"error\">The run has no {} <code>{}</code>; it has {}.</p><p><a \
                     href=\"/loops\">every loop</a></p>",
                    unknown.key,
                    escape(&unknown.value),
                    escape(&unknown.valid.join(", "))
                ),
            ),
        }
    }

    fn task_page(&self, encoded: &str) -> Reply {
        let task: String = form_urlencoded::parse(format!("t={encoded}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        match task::read_task(&self.trajectories, &self.evaluations, &task) {
            Ok(read) if read.loops.is_empty() => self.page(
                404,
                "no such task",
                format!("<h1>No task <code>{}</code></h1><p>The run has no loop of this task.</p>", escape(&task)),
            ),
            Ok(read) => self.page(200, &format!("task {task}"), pages::task::render(&task, &read)),
            Err(error) => self.page(500, "task", format!("<p class=\"error\">{}</p>", escape(&error.to_string()))),
        }
    }

    fn labels_page(&self) -> Reply {
        let Some(labels) = &self.labels else { return self.answer_page() };
        let file = labels.lock().unwrap_or_else(|p| p.into_inner());
        let body = pages::labels::render(&file, &self.run_dir.display().to_string());
        self.page(200, "label", body)
    }

    fn label(&self, body: &[u8]) -> Reply {
        let Some(labels) = &self.labels else {
            return Reply::json(404, "{\"error\":\"critbench view was started without --labels\"}".into());
        };
        let mut answer_id = None;
        let mut gold = None;
        for (key, value) in form_urlencoded::parse(body) {
            match key.as_ref() {
                "answer_id" => answer_id = Some(value.into_owned()),
                "gold" => gold = Some(value.into_owned()),
                _ => {}
            }
        }
        let error = |status, message: String| Reply::json(status, serde_json::json!({ "error": message }).to_string());
        let Some(answer_id) = answer_id else { return error(400, "no answer_id".into()) };
        let gold = match gold.as_deref() {
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some("null") | Some("") => None,
            other => return error(400, format!("gold is {other:?}; expected true, false or null")),
        };
        let mut file = labels.lock().unwrap_or_else(|p| p.into_inner());
        match file.set(&answer_id, gold) {
            Ok(true) => Reply::json(
                200,
                serde_json::json!({
                    "labelled": file.labelling.labelled(),
                    "answers": file.labelling.sample.answers.len(),
                })
                .to_string(),
            ),
            Ok(false) => error(404, format!("answer `{answer_id}` is not in the sample")),
            Err(e) => error(500, e.to_string()),
        }
    }
}
