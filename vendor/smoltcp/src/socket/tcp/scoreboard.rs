//! The sender's SACK scoreboard (RFC 6675 section 3): which octets above
//! SND.UNA the receiver reported holding, kept as sorted, disjoint ranges.
//!
//! The capacity is fixed (as many ranges as the reassembly assembler keeps
//! holes, `ASSEMBLER_MAX_SEGMENT_COUNT`). When a new range does not fit, the
//! highest range is forgotten: the octets it covered are merely resent if they
//! turn out to sit in a hole, so a full scoreboard costs bandwidth, never
//! correctness.

use crate::config::ASSEMBLER_MAX_SEGMENT_COUNT;
use crate::wire::TcpSeqNumber;

const CAPACITY: usize = ASSEMBLER_MAX_SEGMENT_COUNT;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) struct Scoreboard {
    /// `ranges[..len]`, sorted, disjoint and not adjacent; each `(left, right)`
    /// is half-open like a SACK block.
    ranges: [(TcpSeqNumber, TcpSeqNumber); CAPACITY],
    len: usize,
}

impl Default for Scoreboard {
    fn default() -> Self {
        Self {
            ranges: [(TcpSeqNumber(0), TcpSeqNumber(0)); CAPACITY],
            len: 0,
        }
    }
}

impl Scoreboard {
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (TcpSeqNumber, TcpSeqNumber)> + '_ {
        self.ranges[..self.len].iter().copied()
    }

    /// Records `left..right` as held by the receiver and returns how many
    /// octets were not recorded before.
    pub(super) fn insert(&mut self, mut left: TcpSeqNumber, mut right: TcpSeqNumber) -> usize {
        if left >= right {
            return 0;
        }
        // Ranges overlapping or touching left..right merge into it.
        let first = self.ranges[..self.len]
            .iter()
            .position(|&(_, r)| r >= left)
            .unwrap_or(self.len);
        let mut last = first;
        while last < self.len && self.ranges[last].0 <= right {
            left = left.min(self.ranges[last].0);
            right = right.max(self.ranges[last].1);
            last += 1;
        }
        let merged = last - first;
        let before: usize = self.ranges[first..last].iter().map(|&(l, r)| r - l).sum();
        if merged == 0 && self.len == CAPACITY {
            if first == self.len {
                // Higher than everything kept: forget it.
                return 0;
            }
            // Make room by forgetting the highest range.
            self.len -= 1;
        }
        if merged == 0 {
            self.ranges.copy_within(first..self.len, first + 1);
            self.len += 1;
        } else if merged > 1 {
            self.ranges.copy_within(last..self.len, first + 1);
            self.len -= merged - 1;
        }
        self.ranges[first] = (left, right);
        (right - left) - before
    }

    /// Forgets everything below `snd_una`, which the receiver now acknowledges
    /// cumulatively.
    pub(super) fn advance(&mut self, snd_una: TcpSeqNumber) {
        let gone = self.ranges[..self.len]
            .iter()
            .take_while(|&&(_, r)| r <= snd_una)
            .count();
        self.ranges.copy_within(gone..self.len, 0);
        self.len -= gone;
        if self.len > 0 && self.ranges[0].0 < snd_una {
            self.ranges[0].0 = snd_una;
        }
    }

    /// Octets recorded within `from..to`.
    pub(super) fn sacked_between(&self, from: TcpSeqNumber, to: TcpSeqNumber) -> usize {
        self.iter()
            .map(|(l, r)| {
                let (l, r) = (l.max(from), r.min(to));
                if l < r { r - l } else { 0 }
            })
            .sum()
    }

    /// The first sequence number at or above `seq` that is not recorded.
    pub(super) fn skip(&self, seq: TcpSeqNumber) -> TcpSeqNumber {
        self.iter()
            .find(|&(l, r)| l <= seq && seq < r)
            .map_or(seq, |(_, r)| r)
    }

    /// The start of the first recorded range above `seq`.
    pub(super) fn next_start(&self, seq: TcpSeqNumber) -> Option<TcpSeqNumber> {
        self.iter().map(|(l, _)| l).find(|&l| l > seq)
    }

    /// The highest sequence number recorded.
    pub(super) fn highest(&self) -> Option<TcpSeqNumber> {
        self.len.checked_sub(1).map(|i| self.ranges[i].1)
    }

    /// RFC 6675 IsLost: every hole below the returned sequence number has
    /// `dup_thresh` discontiguous ranges, or more than `(dup_thresh - 1) * mss`
    /// octets, recorded above it, and counts as lost.
    pub(super) fn lost_edge(&self, mss: usize, dup_thresh: usize) -> Option<TcpSeqNumber> {
        let mut octets = 0;
        for (count, &(left, right)) in self.ranges[..self.len].iter().rev().enumerate() {
            octets += right - left;
            if count + 1 >= dup_thresh || octets > (dup_thresh - 1) * mss {
                return Some(left);
            }
        }
        None
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn seq(n: i32) -> TcpSeqNumber {
        TcpSeqNumber(n)
    }

    fn ranges(sb: &Scoreboard) -> std::vec::Vec<(i32, i32)> {
        sb.iter().map(|(l, r)| (l.0, r.0)).collect()
    }

    #[test]
    fn insert_merges_and_counts_new_octets() {
        let mut sb = Scoreboard::default();
        assert_eq!(sb.insert(seq(100), seq(200)), 100);
        assert_eq!(sb.insert(seq(300), seq(400)), 100);
        assert_eq!(sb.insert(seq(150), seq(250)), 50);
        assert_eq!(ranges(&sb), [(100, 250), (300, 400)]);
        // Bridges the gap: only the 50 octets in between are new.
        assert_eq!(sb.insert(seq(250), seq(300)), 50);
        assert_eq!(ranges(&sb), [(100, 400)]);
        assert_eq!(sb.insert(seq(120), seq(130)), 0);
        assert_eq!(sb.insert(seq(0), seq(10)), 10);
        assert_eq!(ranges(&sb), [(0, 10), (100, 400)]);
        assert_eq!(sb.insert(seq(5), seq(5)), 0);
    }

    #[test]
    fn advance_trims_below_snd_una() {
        let mut sb = Scoreboard::default();
        sb.insert(seq(100), seq(200));
        sb.insert(seq(300), seq(400));
        sb.advance(seq(150));
        assert_eq!(ranges(&sb), [(150, 200), (300, 400)]);
        sb.advance(seq(250));
        assert_eq!(ranges(&sb), [(300, 400)]);
        sb.advance(seq(400));
        assert!(sb.is_empty());
    }

    #[test]
    fn queries() {
        let mut sb = Scoreboard::default();
        sb.insert(seq(100), seq(200));
        sb.insert(seq(300), seq(400));
        assert_eq!(sb.sacked_between(seq(150), seq(350)), 100);
        assert_eq!(sb.skip(seq(50)), seq(50));
        assert_eq!(sb.skip(seq(100)), seq(200));
        assert_eq!(sb.skip(seq(399)), seq(400));
        assert_eq!(sb.next_start(seq(0)), Some(seq(100)));
        assert_eq!(sb.next_start(seq(100)), Some(seq(300)));
        assert_eq!(sb.next_start(seq(300)), None);
        assert_eq!(sb.highest(), Some(seq(400)));
    }

    #[test]
    fn lost_edge_by_octets_and_by_ranges() {
        let mut sb = Scoreboard::default();
        sb.insert(seq(1000), seq(2000));
        // 1000 octets SACKed above the hole at 0..1000: not more than 2 * 1000.
        assert_eq!(sb.lost_edge(1000, 3), None);
        sb.insert(seq(2000), seq(3001));
        assert_eq!(sb.lost_edge(1000, 3), Some(seq(1000)));

        let mut sb = Scoreboard::default();
        for i in 1..=3 {
            sb.insert(seq(i * 100), seq(i * 100 + 10));
        }
        // Three discontiguous ranges above 0..100, each small.
        assert_eq!(sb.lost_edge(1000, 3), Some(seq(100)));
    }

    #[test]
    fn full_scoreboard_forgets_the_highest_range() {
        let mut sb = Scoreboard::default();
        for i in 0..CAPACITY as i32 {
            sb.insert(seq(1000 + i * 20), seq(1010 + i * 20));
        }
        let top = sb.highest().unwrap();
        // A range above everything kept is dropped.
        assert_eq!(sb.insert(top + 100, top + 110), 0);
        assert_eq!(sb.highest(), Some(top));
        // A range below everything replaces the highest one.
        assert_eq!(sb.insert(seq(0), seq(10)), 10);
        assert_eq!(sb.iter().count(), CAPACITY);
        assert!(sb.highest().unwrap() < top);
        // Merging into an existing range needs no room.
        assert_eq!(sb.insert(seq(10), seq(20)), 10);
        assert_eq!(ranges(&sb)[0], (0, 20));
    }
}
