//! The columns a critique fills, in the order every table that records critiques
//! (`trajectories.parquet`, `judgments.parquet`) writes them: one struct, one schema, one writer
//! and one reader for all of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{BooleanBuilder, Float64Builder, ListBuilder, MapBuilder, StringBuilder};
use arrow_schema::{DataType, Field};
use critbench_core::{Critique, RoundScore};

use crate::columns::Columns;
use crate::schema::{dims_map, string_list, utf8};

/// One critique as recorded: everything the critic said about a draft.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CritiqueColumns {
    /// The critic's score.
    pub score: f64,
    /// Its score of each dimension, by name.
    pub dims: BTreeMap<String, f64>,
    /// The issues it found.
    pub issues: Vec<String>,
    /// The issues that fail the draft whatever its score.
    pub fatal_issues: Vec<String>,
    /// The types the critic tagged its issues with, each once.
    pub issue_types: Vec<String>,
    /// Suggestions as JSON text, null when there are none.
    pub suggestions: Option<String>,
    /// Why, in the critic's words.
    pub rationale: Option<String>,
    /// The critic's own verdict; recorded, never used to decide.
    pub critic_passed: Option<bool>,
}

/// The name of each critique column, by field: the one place they are spelled.
#[derive(Clone, Copy, Debug)]
pub struct CritiqueColumnNames {
    /// `score`.
    pub score: &'static str,
    /// `dims`.
    pub dims: &'static str,
    /// `issues`.
    pub issues: &'static str,
    /// `fatal_issues`.
    pub fatal_issues: &'static str,
    /// `issue_types`.
    pub issue_types: &'static str,
    /// `suggestions`.
    pub suggestions: &'static str,
    /// `rationale`.
    pub rationale: &'static str,
    /// `critic_passed`.
    pub critic_passed: &'static str,
}

const C: CritiqueColumnNames = CritiqueColumns::COLUMNS;

impl CritiqueColumns {
    /// Each field's column name.
    pub const COLUMNS: CritiqueColumnNames = CritiqueColumnNames {
        score: "score",
        dims: "dims",
        issues: "issues",
        fatal_issues: "fatal_issues",
        issue_types: "issue_types",
        suggestions: "suggestions",
        rationale: "rationale",
        critic_passed: "critic_passed",
    };

    /// The names of the columns, in the order they are written.
    pub const NAMES: [&'static str; 8] =
        [C.score, C.dims, C.issues, C.fatal_issues, C.issue_types, C.suggestions, C.rationale, C.critic_passed];

    /// A critique with a score and nothing else.
    pub fn scored(score: f64) -> CritiqueColumns {
        CritiqueColumns { score, ..CritiqueColumns::default() }
    }

    /// What the policy reads of this critique; `failed` when it stands in for a critic call that
    /// failed every attempt.
    pub fn round_score(&self, failed: bool) -> RoundScore {
        RoundScore::of(self.score, &self.dims, &self.fatal_issues, failed)
    }

    /// The columns' Arrow fields, in order.
    pub(crate) fn fields() -> [Field; 8] {
        [
            Field::new(C.score, DataType::Float64, false),
            dims_map(C.dims),
            string_list(C.issues),
            string_list(C.fatal_issues),
            string_list(C.issue_types),
            utf8(C.suggestions, true),
            utf8(C.rationale, true),
            Field::new(C.critic_passed, DataType::Boolean, true),
        ]
    }

    /// The critiques of one batch, row by row.
    pub fn read(c: &Columns<'_>) -> Result<Vec<CritiqueColumns>, crate::columns::TableError> {
        let score = c.required_float(C.score)?;
        let mut dims = c.float_maps(C.dims)?;
        let (mut issues, mut fatal_issues, mut issue_types) =
            (c.string_lists(C.issues)?, c.string_lists(C.fatal_issues)?, c.string_lists(C.issue_types)?);
        let (mut suggestions, mut rationale) = (c.text(C.suggestions)?, c.text(C.rationale)?);
        let critic_passed = c.boolean(C.critic_passed)?;
        Ok((0..score.len())
            .map(|i| CritiqueColumns {
                score: score[i],
                dims: std::mem::take(&mut dims[i]),
                issues: std::mem::take(&mut issues[i]),
                fatal_issues: std::mem::take(&mut fatal_issues[i]),
                issue_types: std::mem::take(&mut issue_types[i]),
                suggestions: suggestions[i].take(),
                rationale: rationale[i].take(),
                critic_passed: critic_passed[i],
            })
            .collect())
    }
}

impl From<Critique> for CritiqueColumns {
    fn from(critique: Critique) -> CritiqueColumns {
        CritiqueColumns {
            score: critique.score,
            suggestions: critique.suggestions_json(),
            dims: critique.dimensions,
            issues: critique.issues,
            fatal_issues: critique.fatal_issues,
            issue_types: critique.issue_types,
            rationale: critique.rationale,
            critic_passed: critique.critic_passed,
        }
    }
}

/// A recorded critique read back as the critic gave it (suggestions parsed from their JSON).
impl From<&CritiqueColumns> for Critique {
    fn from(c: &CritiqueColumns) -> Critique {
        Critique {
            score: c.score,
            dimensions: c.dims.clone(),
            issues: c.issues.clone(),
            fatal_issues: c.fatal_issues.clone(),
            issue_types: c.issue_types.clone(),
            suggestions: c.suggestions.as_deref().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default(),
            critic_passed: c.critic_passed,
            rationale: c.rationale.clone(),
            unread_keys: Vec::new(),
        }
    }
}

/// Builds the critique columns of a batch a row at a time.
pub(crate) struct CritiqueBuilders {
    score: Float64Builder,
    dims: MapBuilder<StringBuilder, Float64Builder>,
    issues: ListBuilder<StringBuilder>,
    fatal_issues: ListBuilder<StringBuilder>,
    issue_types: ListBuilder<StringBuilder>,
    suggestions: StringBuilder,
    rationale: StringBuilder,
    critic_passed: BooleanBuilder,
}

fn append_list(builder: &mut ListBuilder<StringBuilder>, items: &[String]) {
    for item in items {
        builder.values().append_value(item);
    }
    builder.append(true);
}

/// Room for the text of a batch of short strings (ids, labels): a guess, grown as needed.
pub(crate) const TEXT_BYTES_PER_ROW: usize = 16;

impl CritiqueBuilders {
    /// Builders with room for `rows` critiques.
    pub fn with_capacity(rows: usize) -> CritiqueBuilders {
        // Sized for the batch, not arrow's default of 1,024 values: a chunk of a few tasks then
        // costs a few small buffers, not some forty kilobytes of them.
        let text = || StringBuilder::with_capacity(rows, rows * TEXT_BYTES_PER_ROW);
        CritiqueBuilders {
            score: Float64Builder::with_capacity(rows),
            dims: MapBuilder::with_capacity(None, text(), Float64Builder::with_capacity(rows), rows),
            issues: ListBuilder::with_capacity(text(), rows),
            fatal_issues: ListBuilder::with_capacity(text(), rows),
            issue_types: ListBuilder::with_capacity(text(), rows),
            suggestions: text(),
            rationale: text(),
            critic_passed: BooleanBuilder::with_capacity(rows),
        }
    }

    pub fn append(&mut self, critique: &CritiqueColumns) {
        self.score.append_value(critique.score);
        for (name, value) in &critique.dims {
            self.dims.keys().append_value(name);
            self.dims.values().append_value(*value);
        }
        self.dims.append(true).expect("map keys and values are appended in pairs");
        append_list(&mut self.issues, &critique.issues);
        append_list(&mut self.fatal_issues, &critique.fatal_issues);
        append_list(&mut self.issue_types, &critique.issue_types);
        self.suggestions.append_option(critique.suggestions.as_deref());
        self.rationale.append_option(critique.rationale.as_deref());
        self.critic_passed.append_option(critique.critic_passed);
    }

    /// The columns of the rows appended since the last call, in the order of
    /// [`CritiqueColumns::fields`].
    pub fn finish(&mut self) -> [ArrayRef; 8] {
        [
            Arc::new(self.score.finish()),
            Arc::new(self.dims.finish()),
            Arc::new(self.issues.finish()),
            Arc::new(self.fatal_issues.finish()),
            Arc::new(self.issue_types.finish()),
            Arc::new(self.suggestions.finish()),
            Arc::new(self.rationale.finish()),
            Arc::new(self.critic_passed.finish()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_in_order() {
        let names: Vec<String> = CritiqueColumns::fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, CritiqueColumns::NAMES);
    }

    #[test]
    fn a_critique_keeps_every_field() {
        let critique = Critique::parse(
            r#"{"score": 6, "dimensions": {"a": 4, "b": 8}, "issues": ["x"], "fatal_issues": ["y"],
                "suggestions": [{"edit": "z"}], "passed": false, "rationale": "r"}"#,
            critbench_core::ScoreRange { min: 0.0, max: 10.0 },
            None,
        )
        .unwrap();
        let columns = CritiqueColumns::from(critique.clone());
        assert_eq!(columns.round_score(false), critique.round_score(false));
        assert_eq!(columns.suggestions.as_deref(), Some(r#"[{"edit":"z"}]"#));
        assert_eq!((columns.critic_passed, columns.rationale.as_deref()), (Some(false), Some("r")));
        assert_eq!(columns.round_score(true), RoundScore { failed: true, ..critique.round_score(false) });
    }
}
