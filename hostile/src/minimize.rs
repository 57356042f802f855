//! Delta debugging (Zeller's ddmin): the smallest part of a failing input
//! that still fails, found with a bounded number of tries. Pure: the test
//! is a closure, so a scripted predicate checks the search and a live
//! target drives it in `iwarp fuzz-peer`.

/// A 1-minimal sublist of `items` for which `fails` holds (removing any
/// one more item makes it pass), or the smallest found within `max_tries`
/// calls of `fails`. `items` itself is assumed to fail; order is kept.
pub fn ddmin<T: Clone>(
    items: &[T],
    mut fails: impl FnMut(&[T]) -> bool,
    max_tries: usize,
) -> Vec<T> {
    let mut current: Vec<T> = items.to_vec();
    let mut n = 2usize;
    let mut tries = 0usize;
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(n);
        let mut reduced = false;
        // Try each chunk alone, then each complement.
        let parts: Vec<(usize, usize)> = (0..current.len())
            .step_by(chunk)
            .map(|s| (s, (s + chunk).min(current.len())))
            .collect();
        for &(s, e) in &parts {
            if tries >= max_tries {
                return current;
            }
            tries += 1;
            let subset = current[s..e].to_vec();
            if fails(&subset) {
                current = subset;
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && parts.len() > 2 {
            for &(s, e) in &parts {
                if tries >= max_tries {
                    return current;
                }
                tries += 1;
                let mut complement = current[..s].to_vec();
                complement.extend_from_slice(&current[e..]);
                if fails(&complement) {
                    current = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= current.len() {
                break;
            }
            n = (n * 2).min(current.len());
        }
    }
    if current.len() == 1 && tries < max_tries && fails(&[]) {
        return Vec::new();
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_two_items_that_fail_together() {
        let items: Vec<u32> = (0..40).collect();
        let mut calls = 0;
        let min = ddmin(
            &items,
            |s| {
                calls += 1;
                s.contains(&7) && s.contains(&31)
            },
            1000,
        );
        assert_eq!(min, vec![7, 31]);
        assert!(calls < 200, "{calls} tries");
    }

    #[test]
    fn a_single_culprit_is_found() {
        let items: Vec<u32> = (0..9).collect();
        assert_eq!(ddmin(&items, |s| s.contains(&4), 100), vec![4]);
    }

    #[test]
    fn failing_with_nothing_gives_nothing() {
        assert_eq!(ddmin(&[1, 2, 3], |_| true, 100), Vec::<i32>::new());
    }

    #[test]
    fn the_budget_bounds_the_tries() {
        let items: Vec<u32> = (0..64).collect();
        let mut calls = 0;
        let out = ddmin(
            &items,
            |s| {
                calls += 1;
                s.len() > 10
            },
            5,
        );
        assert!(calls <= 5);
        assert!(out.len() > 10, "still failing: {}", out.len());
    }
}
