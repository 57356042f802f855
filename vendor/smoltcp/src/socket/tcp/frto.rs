//! F-RTO: detecting spurious retransmission timeouts (RFC 5682 section 3,
//! the SACK-enhanced variant, as Linux's `tcp_process_loss` does it).
//! After a timeout only the segment at SND.UNA is resent at first; if the
//! ACKs that follow report data held that was never resent, the original
//! flight was only late, the timeout spurious, and the sender goes on with
//! new data and its old congestion window instead of resending the window.

use crate::wire::TcpSeqNumber;

/// The state of one timeout's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) struct Frto {
    /// SND.MAX when the timer fired ("recover").
    pub(super) high: TcpSeqNumber,
    /// Set once new data was sent (step 2b): the end of what had been
    /// resent; everything above it was sent once only.
    pub(super) resent_to: Option<TcpSeqNumber>,
}

/// What an ACK tells about the timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Data never resent was (S)ACKed, or the resend was D-SACKed: the
    /// timeout was spurious.
    Spurious,
    /// The resend of the head was acknowledged, nothing else yet: send
    /// new data to see what the next ACK says (step 2b).
    SendNew,
    /// The loss was real: recover the conventional way (go-back-N).
    Real,
    /// No news; wait for the next ACK.
    Wait,
}

/// What the ACK brought, seen from the check.
#[derive(Debug, Clone, Copy)]
pub(super) struct AckNews {
    /// Octets never resent newly acknowledged or SACKed.
    pub(super) original_delivered: bool,
    /// Every resend of the timeout was reported duplicate by D-SACK.
    pub(super) resends_duplicate: bool,
    /// SND.UNA advanced.
    pub(super) advanced: bool,
    /// SND.UNA after the ACK.
    pub(super) ack: TcpSeqNumber,
    /// The ACK SACKed new data, or it was a duplicate.
    pub(super) sacked_or_dup: bool,
}

impl Frto {
    pub(super) fn new(high: TcpSeqNumber) -> Frto {
        Frto {
            high,
            resent_to: None,
        }
    }

    pub(super) fn on_ack(&self, news: AckNews) -> Verdict {
        if news.original_delivered || news.resends_duplicate {
            return Verdict::Spurious;
        }
        match self.resent_to {
            // Step 3a: new data went out, and the next ACK only reports
            // what was resent or nothing new: the flight was lost.
            Some(_) if news.sacked_or_dup => Verdict::Real,
            Some(_) => Verdict::Wait,
            // Step 2b; an ACK of everything leaves nothing to judge.
            None if news.advanced && news.ack < self.high => Verdict::SendNew,
            None if news.advanced => Verdict::Real,
            None => Verdict::Wait,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn news(original: bool, advanced: bool, ack: i32, sacked_or_dup: bool) -> AckNews {
        AckNews {
            original_delivered: original,
            resends_duplicate: false,
            advanced,
            ack: TcpSeqNumber(ack),
            sacked_or_dup,
        }
    }

    #[test]
    fn original_data_delivered_is_spurious_in_either_step() {
        let mut f = Frto::new(TcpSeqNumber(1000));
        assert_eq!(f.on_ack(news(true, false, 0, true)), Verdict::Spurious);
        f.resent_to = Some(TcpSeqNumber(100));
        assert_eq!(f.on_ack(news(true, true, 200, false)), Verdict::Spurious);
        let dsack = AckNews {
            resends_duplicate: true,
            ..news(false, false, 0, true)
        };
        assert_eq!(f.on_ack(dsack), Verdict::Spurious);
    }

    #[test]
    fn steps_two_and_three() {
        let mut f = Frto::new(TcpSeqNumber(1000));
        assert_eq!(f.on_ack(news(false, false, 0, true)), Verdict::Wait);
        assert_eq!(f.on_ack(news(false, true, 100, false)), Verdict::SendNew);
        assert_eq!(f.on_ack(news(false, true, 1000, false)), Verdict::Real);
        f.resent_to = Some(TcpSeqNumber(100));
        assert_eq!(f.on_ack(news(false, false, 100, false)), Verdict::Wait);
        assert_eq!(f.on_ack(news(false, false, 100, true)), Verdict::Real);
    }
}
