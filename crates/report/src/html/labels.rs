//! Point labels of the scatter: config ids shortened to what tells them apart, placed greedily
//! where they overlap nothing.

use std::collections::HashMap;

/// Config ids shortened for point labels: the `-`-separated parts every config shares (in a grid
/// over pass score and revision cap, `stall-e0`) say nothing about which point is which.
pub(crate) fn short_config_labels(configs: &[&str]) -> HashMap<String, String> {
    let parts: Vec<Vec<&str>> = configs.iter().map(|c| c.split('-').collect()).collect();
    let same_shape = parts.windows(2).all(|w| w[0].len() == w[1].len());
    let shared = |position: usize| parts.iter().all(|p| p[position] == parts[0][position]);
    configs
        .iter()
        .zip(&parts)
        .map(|(config, split)| {
            let kept: Vec<&str> =
                split.iter().enumerate().filter(|(i, _)| !same_shape || !shared(*i)).map(|(_, p)| *p).collect();
            let label = if kept.is_empty() { config.to_string() } else { kept.join("-") };
            (config.to_string(), label)
        })
        .collect()
}

/// An axis-aligned box: left, top, right, bottom.
pub(crate) type Box2 = (f64, f64, f64, f64);

/// Where a label goes: the first of a few spots around its point that stays inside `area` and
/// overlaps nothing placed before (greedy: grid points crowd, and overlapping labels are
/// unreadable). Returns the text's left end and baseline.
pub(crate) fn place_label(placed: &mut Vec<Box2>, (x, y): (f64, f64), width: f64, area: Box2) -> (f64, f64) {
    let height = 12.0;
    let candidates = [
        (x + 8.0, y + 4.0),
        (x - 8.0 - width, y + 4.0),
        (x - width / 2.0, y - 9.0),
        (x - width / 2.0, y + 18.0),
        (x + 7.0, y - 8.0),
        (x + 7.0, y + 16.0),
        (x - 7.0 - width, y - 8.0),
        (x - 7.0 - width, y + 16.0),
        (x + 8.0, y - 20.0),
        (x + 8.0, y + 28.0),
    ];
    let bounds = |(left, baseline): (f64, f64)| (left, baseline - height + 2.0, left + width, baseline + 3.0);
    let free = |spot: (f64, f64)| {
        let (left, top, right, bottom) = bounds(spot);
        left >= area.0
            && top >= area.1
            && right <= area.2
            && bottom <= area.3
            && placed.iter().all(|(l, t, r, b)| right < *l || left > *r || bottom < *t || top > *b)
    };
    let inside = |spot: &&(f64, f64)| {
        let (left, _, right, _) = bounds(**spot);
        left >= area.0 && right <= area.2
    };
    let spot = candidates
        .iter()
        .find(|c| free(**c))
        .or_else(|| candidates.iter().find(inside))
        .copied()
        .unwrap_or(candidates[0]);
    placed.push(bounds(spot));
    spot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_labels_leave_out_what_every_config_shares() {
        let labels = short_config_labels(&["p7-r1-stall-e0", "p8-r1-stall-e0", "p8-r3-stall-e0"]);
        assert_eq!(labels["p7-r1-stall-e0"], "p7-r1");
        assert_eq!(labels["p8-r3-stall-e0"], "p8-r3");
        let labels = short_config_labels(&["p8-r3-stall-e0", "p8-r3-nostall-e0"]);
        assert_eq!(labels["p8-r3-nostall-e0"], "nostall");
        // Ids of different shapes are kept whole rather than cut inconsistently.
        let labels = short_config_labels(&["a-b", "a-b-c"]);
        assert_eq!((labels["a-b"].as_str(), labels["a-b-c"].as_str()), ("a-b", "a-b-c"));
    }

    #[test]
    fn labels_avoid_each_other_and_stay_in_the_plot() {
        let mut placed = Vec::new();
        let area = (0.0, 0.0, 200.0, 200.0);
        let first = place_label(&mut placed, (100.0, 100.0), 40.0, area);
        let second = place_label(&mut placed, (100.0, 100.0), 40.0, area);
        assert_ne!(first, second);
        // A point on the right edge puts its label to the left.
        let edge = place_label(&mut placed, (198.0, 50.0), 40.0, area);
        assert!(edge.0 + 40.0 <= 200.0, "{edge:?}");
    }
}
