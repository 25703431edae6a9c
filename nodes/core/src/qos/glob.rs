//! Topic-filter globs: `*` matches any run of characters (slashes included), `?` exactly one.
//!
//! DDS-XML leaves the filter syntax to the implementation; this is the fnmatch subset that RTI
//! and Cyclone users write (`convoy/sensor/*`, `convoy/agent/car_?/state`). There is no escape
//! character because convoy topic names never contain `*` or `?` (see `topics::check_id`).

/// True when `pattern` matches all of `text`.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Greedy matching with one backtrack point (the last `*`): linear in practice and never
    // exponential, unlike the naive recursion, whatever a QoS file puts in a filter.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((star_pi, star_ti)) = star {
            // Let the last `*` swallow one more character and retry from there.
            pi = star_pi + 1;
            ti = star_ti + 1;
            star = Some((star_pi, star_ti + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn literal_patterns_match_only_themselves() {
        assert!(glob_matches("convoy/clock", "convoy/clock"));
        assert!(!glob_matches("convoy/clock", "convoy/clocks"));
        assert!(!glob_matches("convoy/clocks", "convoy/clock"));
        assert!(glob_matches("", ""));
        assert!(!glob_matches("", "a"));
    }

    #[test]
    fn star_spans_any_run_including_slashes() {
        assert!(glob_matches("*", ""));
        assert!(glob_matches("*", "convoy/sensor/ego/cam"));
        assert!(glob_matches(
            "convoy/sensor/*",
            "convoy/sensor/ego/front_cam"
        ));
        assert!(glob_matches(
            "convoy/agent/*/state",
            "convoy/agent/car_1/state"
        ));
        assert!(!glob_matches(
            "convoy/agent/*/state",
            "convoy/agent/car_1/control"
        ));
        assert!(glob_matches("*/state", "convoy/agent/a/state"));
        assert!(glob_matches(
            "convoy/*/*/lidar*",
            "convoy/sensor/ego/lidar_top"
        ));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("a*b*c", "axxbyy"));
        assert!(glob_matches("a**b", "ab"));
        // Backtracking: the first `b` is not the one that must end the match.
        assert!(glob_matches("*bc", "abbc"));
    }

    #[test]
    fn question_mark_is_exactly_one_character() {
        assert!(glob_matches(
            "convoy/agent/car_?/state",
            "convoy/agent/car_7/state"
        ));
        assert!(!glob_matches(
            "convoy/agent/car_?/state",
            "convoy/agent/car_17/state"
        ));
        assert!(!glob_matches("?", ""));
        assert!(glob_matches("?*", "x"));
        assert!(glob_matches("é?", "éa"));
    }
}
