//! Undoing a loss episode's window reduction when every retransmission in
//! it proves needless (RFC 3708 with D-SACK, RFC 2883; Linux's
//! `undo_marker`, `undo_retrans` and `tcp_try_undo_dsack`). On a path that
//! reorders, DupThresh, RACK before its window has grown, or a late poll
//! call data lost that was only late; the receiver then reports each resend
//! as a duplicate, and the sender puts its congestion window back.

use super::congestion::AnyController;
use crate::wire::TcpSeqNumber;

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
    /// The controller before the episode cut its window.
    prior: AnyController,
}

impl Undo {
    pub(super) fn begin(snd_una: TcpSeqNumber, controller: &AnyController) -> Undo {
        Undo {
            marker: snd_una,
            retrans: 0,
            prior: controller.clone(),
        }
    }

    /// A segment of the episode was resent.
    pub(super) fn on_retransmit(&mut self) {
        self.retrans = self.retrans.saturating_add(1);
    }

    /// A D-SACK reported `left..right` received twice; a block of the
    /// episode's counts as that many of its resends (segments of `mss`).
    /// True if the block belongs to the episode.
    pub(super) fn on_dsack(&mut self, left: TcpSeqNumber, right: TcpSeqNumber, mss: usize) -> bool {
        if left < self.marker || self.retrans == 0 {
            return false;
        }
        let segments = (right - left).div_ceil(mss.max(1)).max(1);
        self.retrans = self
            .retrans
            .saturating_sub(u32::try_from(segments).unwrap_or(u32::MAX));
        true
    }

    /// Every resend of the episode was reported duplicate.
    pub(super) fn all_spurious(&self) -> bool {
        self.retrans == 0
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
        undo.on_retransmit();
        undo.on_retransmit();
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
