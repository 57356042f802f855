//! Undoing a loss episode's window reduction when every retransmission in
//! it proves needless (RFC 3708 with D-SACK, RFC 2883; Linux's
//! `undo_marker`, `undo_retrans` and `tcp_try_undo_dsack`). On a path that
//! reorders, DupThresh, RACK before its window has grown, or a late poll
//! call data lost that was only late; the receiver then reports each resend
//! as a duplicate, and the sender puts its congestion window back.

use super::congestion::AnyController;
use crate::wire::TcpSeqNumber;

/// Resent ranges an episode remembers; more than these and it can no
/// longer tell which D-SACKs are its own, so it is never undone.
const RESENT_RANGES: usize = 16;

/// One episode's undo state: where it began, what it resent, and the
/// congestion controller as it was before the reduction.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) struct Undo {
    /// SND.UNA when the episode began: D-SACKs below it are an older
    /// episode's.
    marker: TcpSeqNumber,
    /// Segments resent in the episode not yet reported duplicate.
    retrans: u32,
    /// What the episode resent: contiguous ranges, each with the resent
    /// segments in it not yet reported duplicate (Linux marks each resent
    /// segment `TCPCB_RETRANS` and credits a D-SACK only for those).
    resent: [Option<(TcpSeqNumber, TcpSeqNumber, u32)>; RESENT_RANGES],
    /// More ranges were resent than `resent` holds.
    overflowed: bool,
    /// The controller before the episode cut its window.
    prior: AnyController,
}

impl Undo {
    pub(super) fn begin(snd_una: TcpSeqNumber, controller: &AnyController) -> Undo {
        Undo {
            marker: snd_una,
            retrans: 0,
            resent: [None; RESENT_RANGES],
            overflowed: false,
            prior: controller.clone(),
        }
    }

    /// The episode resent `start..end` (one segment).
    pub(super) fn on_retransmit(&mut self, start: TcpSeqNumber, end: TcpSeqNumber) {
        self.retrans = self.retrans.saturating_add(1);
        // The range this one extends or lies in (a go-back resend is one
        // growing range), else a free slot.
        let slot = self.resent.iter().position(|r| {
            r.is_some_and(|(from, to, _)| {
                (from <= start && start <= to) || (start < from && end >= from)
            })
        });
        match slot.or_else(|| self.resent.iter().position(Option::is_none)) {
            Some(i) => {
                let (from, to, segments) = self.resent[i].unwrap_or((start, end, 0));
                self.resent[i] = Some((from.min(start), to.max(end), segments.saturating_add(1)));
            }
            None => self.overflowed = true,
        }
    }

    /// A D-SACK (RFC 2883) reported `left..right` received twice: each of
    /// the episode's resends it covers (segments of `mss`) is credited,
    /// data never resent in the episode is not. True if it covered any.
    pub(super) fn on_dsack(&mut self, left: TcpSeqNumber, right: TcpSeqNumber, mss: usize) -> bool {
        if right <= self.marker || self.retrans == 0 {
            return false;
        }
        let mut credited = false;
        for range in self.resent.iter_mut() {
            let Some((from, to, segments)) = *range else {
                continue;
            };
            let (l, r) = (left.max(from).max(self.marker), right.min(to));
            if l >= r || segments == 0 {
                continue;
            }
            let covered = u32::try_from((r - l).div_ceil(mss.max(1))).unwrap_or(u32::MAX);
            let credit = covered.max(1).min(segments);
            *range = Some((from, to, segments - credit));
            self.retrans = self.retrans.saturating_sub(credit);
            credited = true;
        }
        credited
    }

    /// Every resend of the episode was reported duplicate.
    pub(super) fn all_spurious(&self) -> bool {
        self.retrans == 0 && !self.overflowed
    }

    /// Puts the controller back as it was before the episode, unless it has
    /// grown past that since (Linux keeps the larger of the two windows).
    /// True if it was put back.
    pub(super) fn restore(self, controller: &mut AnyController) -> bool {
        if self.prior.inner().window() > controller.inner().window() {
            *controller = self.prior;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn seq(n: i32) -> TcpSeqNumber {
        TcpSeqNumber(n)
    }

    #[test]
    fn undone_only_when_every_resend_was_a_duplicate() {
        let before = AnyController::new();
        let mut undo = Undo::begin(seq(1000), &before);
        undo.on_retransmit(seq(1000), seq(1100));
        undo.on_retransmit(seq(1100), seq(1150));
        // Below the episode: an older episode's resend.
        assert!(!undo.on_dsack(seq(500), seq(600), 100));
        assert!(undo.on_dsack(seq(1000), seq(1100), 100));
        assert!(!undo.all_spurious());
        assert!(undo.on_dsack(seq(1100), seq(1150), 100));
        assert!(undo.all_spurious());
        // Nothing left to match.
        assert!(!undo.on_dsack(seq(1200), seq(1300), 100));
    }

    #[test]
    fn dsack_of_data_never_resent_credits_nothing() {
        let before = AnyController::new();
        let mut undo = Undo::begin(seq(1000), &before);
        undo.on_retransmit(seq(1000), seq(1100));
        undo.on_retransmit(seq(1300), seq(1400));
        // Never resent in the episode.
        assert!(!undo.on_dsack(seq(1100), seq(1300), 100));
        // A long block over one resend credits that one only.
        assert!(undo.on_dsack(seq(1000), seq(1300), 100));
        assert!(!undo.all_spurious());
        // The same data reported twice is credited once.
        assert!(!undo.on_dsack(seq(1000), seq(1100), 100));
        assert!(undo.on_dsack(seq(1300), seq(1400), 100));
        assert!(undo.all_spurious());
    }

    #[test]
    fn a_segment_resent_twice_needs_two_dsacks() {
        let mut undo = Undo::begin(seq(0), &AnyController::new());
        undo.on_retransmit(seq(0), seq(100));
        undo.on_retransmit(seq(0), seq(100));
        assert!(undo.on_dsack(seq(0), seq(100), 100));
        assert!(!undo.all_spurious());
        assert!(undo.on_dsack(seq(0), seq(100), 100));
        assert!(undo.all_spurious());
    }

    #[test]
    fn too_many_resent_ranges_are_never_undone() {
        let mut undo = Undo::begin(seq(0), &AnyController::new());
        for i in 0..=RESENT_RANGES {
            let start = seq(i as i32 * 200);
            undo.on_retransmit(start, start + 100);
        }
        for i in 0..=RESENT_RANGES {
            let start = seq(i as i32 * 200);
            undo.on_dsack(start, start + 100, 100);
        }
        assert!(!undo.all_spurious());
    }

    #[test]
    fn restores_only_a_larger_window() {
        let mut current = AnyController::new();
        current.inner_mut().set_mss(1000);
        current.inner_mut().set_remote_window(1 << 20);
        let mut bigger = current.clone();
        for _ in 0..20 {
            bigger.inner_mut().on_ack(
                crate::time::Instant::ZERO,
                1000,
                0,
                &super::super::RttEstimator::default(),
            );
        }
        let snapshot = Undo::begin(seq(0), &bigger);
        let grown = bigger.inner().window();
        if grown > current.inner().window() {
            assert!(snapshot.clone().restore(&mut current));
            assert_eq!(current.inner().window(), grown);
        }
        // The current window is no smaller now: nothing to put back.
        assert!(!snapshot.restore(&mut current));
    }
}
