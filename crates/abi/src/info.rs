//! What a plugin declares about itself: the info JSON of `critbench.h`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The version of the info JSON (`info_version`).
pub const INFO_VERSION: u32 = 1;

/// A plugin's info: the issue types it tags, the host services it requires and hints for its
/// users. The default declares nothing (a plugin whose descriptor's `info` is empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginInfo {
    /// [`INFO_VERSION`] of the plugin that wrote it.
    pub info_version: u32,
    /// The types its typed issues carry (`{"text", "type"}`), with their memory hints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issue_types: Vec<IssueType>,
    /// Host services the plugin cannot work without (e.g. `chat`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Texts for its users by occasion: `requires` (a required service is not offered),
    /// `not_found` (how to build or get the plugin), and any others a host may show.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hints: BTreeMap<String, String>,
}

/// One issue type a plugin tags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueType {
    /// The machine-readable name, as in an issue's `type`.
    pub name: String,
    /// What strategy memory tells a writer that kept making this mistake.
    pub hint: String,
}

/// Why an info JSON is refused.
#[derive(Debug, thiserror::Error)]
pub enum InfoError {
    /// Not JSON of the info's shape.
    #[error("the info JSON is not valid: {0}")]
    Json(#[source] serde_json::Error),
    /// `info_version` missing or 0.
    #[error("the info JSON needs `info_version` (1 or later)")]
    NoVersion,
    /// An issue type without a name.
    #[error("an issue type in the info JSON has an empty `name`")]
    UnnamedIssueType,
    /// An issue type declared twice, by name.
    #[error("the info JSON declares issue type `{0}` twice")]
    IssueTypeTwice(String),
}

impl PluginInfo {
    /// Parses an info JSON; empty text declares nothing. Fields this version does not know are
    /// ignored (later versions only add fields).
    pub fn parse(text: &str) -> Result<PluginInfo, InfoError> {
        if text.trim().is_empty() {
            return Ok(PluginInfo::default());
        }
        let info: PluginInfo = serde_json::from_str(text).map_err(InfoError::Json)?;
        if info.info_version == 0 {
            return Err(InfoError::NoVersion);
        }
        if info.issue_types.iter().any(|issue| issue.name.is_empty()) {
            return Err(InfoError::UnnamedIssueType);
        }
        if let Some(twice) =
            info.issue_types.iter().enumerate().find(|(i, t)| info.issue_types[..*i].iter().any(|u| u.name == t.name))
        {
            return Err(InfoError::IssueTypeTwice(twice.1.name.clone()));
        }
        Ok(info)
    }

    /// The hint a plugin gives for issue type `name`, if it declares that type.
    pub fn issue_hint(&self, name: &str) -> Option<&str> {
        self.issue_types.iter().find(|t| t.name == name).map(|t| t.hint.as_str())
    }

    /// The plugin's hint for `occasion` (`requires`, `not_found`, …), if it gives one.
    pub fn hint(&self, occasion: &str) -> Option<&str> {
        self.hints.get(occasion).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_parses_declares_nothing_when_empty_and_rejects_bad_json() {
        assert_eq!(PluginInfo::parse("").unwrap(), PluginInfo::default());
        let info = PluginInfo::parse(
            r#"{"info_version": 2, "issue_types": [{"name": "x", "hint": "Do y."}], "requires": ["chat"],
                "hints": {"not_found": "build it"}, "later_field": true}"#,
        )
        .unwrap();
        assert_eq!(info.issue_hint("x"), Some("Do y."));
        assert_eq!(info.issue_hint("z"), None);
        assert_eq!(info.requires, ["chat"]);
        assert_eq!(info.hint("not_found"), Some("build it"));
        assert!(PluginInfo::parse("{}").unwrap_err().to_string().contains("info_version"));
        assert!(PluginInfo::parse("{").unwrap_err().to_string().contains("not valid"));
        let twice = r#"{"info_version": 1, "issue_types": [{"name": "x", "hint": "a"}, {"name": "x", "hint": "b"}]}"#;
        assert!(PluginInfo::parse(twice).unwrap_err().to_string().contains("`x` twice"));
    }
}
