//! How much a revision changed its draft, cheaply enough to measure every revision of a run.

/// The share of the longer of `before` and `after` (in bytes) outside their longest common
/// prefix and suffix: 0 for an unchanged draft, near 0 for one that appended or changed a few
/// words, near 1 for a rewrite. It bounds the normalized edit distance from above (an edit script
/// that rewrites only the middle exists), and costs one pass over the common ends.
pub fn edit_share(before: &str, after: &str) -> f64 {
    let (a, b) = (before.as_bytes(), after.as_bytes());
    let longer = a.len().max(b.len());
    if longer == 0 {
        return 0.0;
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
    let suffix = a_rest.iter().rev().zip(b_rest.iter().rev()).take_while(|(x, y)| x == y).count();
    (longer - prefix - suffix) as f64 / longer as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_draft_is_0_and_a_rewrite_is_1() {
        assert_eq!(edit_share("same text", "same text"), 0.0);
        assert_eq!(edit_share("", ""), 0.0);
        assert_eq!(edit_share("abc", "xyz"), 1.0);
        assert_eq!(edit_share("", "new"), 1.0);
    }

    #[test]
    fn an_edit_counts_only_the_middle_it_changed() {
        // One word of nine changed in the middle: 4 of 37 bytes.
        let before = "the tide pools hold life at low water";
        let after = "the tide pools keep life at low water";
        assert!((edit_share(before, after) - 4.0 / 37.0).abs() < 1e-12, "{}", edit_share(before, after));
        // Appending a sentence changes only the appended part.
        assert_eq!(edit_share("one.", "one. two."), 5.0 / 9.0);
        // Prefix and suffix never overlap: a repeated letter is counted once.
        assert_eq!(edit_share("aa", "aaa"), 1.0 / 3.0);
    }
}
