//! A draft as the words inserted and deleted since the draft before it: `<ins>` and `<del>` around
//! runs of changed words, every piece of text escaped, the whole of both drafts kept.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

use crate::html::escape;

/// How long the word diff may search for the shortest edit before it settles for a longer one
/// (two drafts of a megabyte each still render).
const DEADLINE: Duration = Duration::from_millis(300);

/// `after` as HTML, its words not in `before` inside `<ins>` and the words of `before` it dropped
/// inside `<del>`, in reading order: within a stretch of changed words (the spaces between them
/// included) the words deleted come first, then those inserted.
pub fn words(before: &str, after: &str) -> String {
    let diff = TextDiff::configure().timeout(DEADLINE).diff_words(before, after);
    let changes: Vec<(ChangeTag, &str)> = diff.iter_all_changes().map(|c| (c.tag(), c.value())).collect();
    let mut out = String::with_capacity(after.len() + after.len() / 4);
    let (mut deleted, mut inserted) = (String::new(), String::new());
    for (i, &(tag, text)) in changes.iter().enumerate() {
        let changed = |at: Option<&(ChangeTag, &str)>| at.is_some_and(|(tag, _)| *tag != ChangeTag::Equal);
        // Space between two changed words belongs to the change on both sides.
        let between = tag == ChangeTag::Equal
            && text.trim().is_empty()
            && changed(i.checked_sub(1).and_then(|p| changes.get(p)))
            && changed(changes.get(i + 1));
        match tag {
            ChangeTag::Delete => deleted.push_str(text),
            ChangeTag::Insert => inserted.push_str(text),
            ChangeTag::Equal if between => {
                deleted.push_str(text);
                inserted.push_str(text);
            }
            ChangeTag::Equal => {
                flush(&mut out, &mut deleted, &mut inserted);
                out.push_str(&escape(text));
            }
        }
    }
    flush(&mut out, &mut deleted, &mut inserted);
    out
}

/// Writes a stretch of changes: what was deleted, then what was inserted (a side with only the
/// spaces between changes of the other side is left out).
fn flush(out: &mut String, deleted: &mut String, inserted: &mut String) {
    for (text, tag) in [(&mut *deleted, "del"), (&mut *inserted, "ins")] {
        if text.trim().is_empty() {
            out.push_str(&escape(if tag == "ins" { text } else { "" }));
        } else {
            out.push_str(&format!("<{tag}>{}</{tag}>", escape(text)));
        }
        text.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_and_deleted_words_are_marked_and_the_rest_kept_escaped() {
        let html = words("The result <is> weak.", "The result <is> strong and cited.");
        assert_eq!(html, "The result &lt;is&gt; <del>weak.</del><ins>strong and cited.</ins>");
        assert_eq!(
            words("Prior work shows it", "Earlier studies show it"),
            "<del>Prior work shows</del><ins>Earlier studies show</ins> it"
        );
        assert_eq!(words("same text", "same text"), "same text");
        assert_eq!(words("", "new"), "<ins>new</ins>");
        assert_eq!(words("old", ""), "<del>old</del>");
    }

    #[test]
    fn a_long_draft_is_shown_whole() {
        let before: String = (0..20_000).map(|i| format!("w{i} ")).collect();
        let after = before.replace("w10000 ", "changed ");
        let html = words(&before, &after);
        assert!(html.contains("<del>w10000</del><ins>changed</ins>"), "{}", &html[..200]);
        let shown: String = html.replace("<del>w10000</del>", "").replace("<ins>", "").replace("</ins>", "");
        assert_eq!(shown, after);
    }
}
