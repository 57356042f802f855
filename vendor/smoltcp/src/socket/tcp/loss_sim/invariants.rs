//! The rules a sender must keep, checked on every step of the simulation:
//! after each segment a socket sends and each one it receives. Goodput and
//! delivery alone would reward a sender that breaks them.
//!
//! - The RFC 6675 flight estimate ("pipe") never exceeds cwnd after a
//!   segment is sent, except by what the RFCs allow: the first fast
//!   retransmit (RFC 6675 section 5 step 4.3), the tail loss probe (RFC 8985
//!   section 7.3) and RFC 3042's limited transmit of two segments.
//! - Every loss episode (a fast recovery or a timeout) cuts cwnd when it
//!   begins; only an undo (F-RTO, D-SACK) may later put it back.
//! - No segment reaches past the peer's advertised window, but for a
//!   zero-window probe's octet.
//! - No data is taken from a segment whose ACK lies outside RFC 5961
//!   section 5.2's window, SND.UNA - MAX.SND.WND ..= SND.MAX.

use super::super::{Socket, TcpSeqNumber};

/// What the checks need from just before a step.
#[derive(Debug, Clone)]
pub(super) struct Before {
    pipe: usize,
    una: TcpSeqNumber,
    snd_wnd: usize,
    cwnd: usize,
    fast_recoveries: u64,
    timeouts: u64,
    tail_loss_probes: u64,
    first_retransmit: bool,
    probe: bool,
    dup_acks: u8,
    in_recovery: bool,
    received: (TcpSeqNumber, std::vec::Vec<(usize, usize)>),
    ack_window: (TcpSeqNumber, TcpSeqNumber),
}

fn cwnd(s: &Socket) -> usize {
    s.congestion_controller.inner().window()
}

/// RCV.NXT and what the assembler holds beyond it.
fn received(s: &Socket) -> (TcpSeqNumber, std::vec::Vec<(usize, usize)>) {
    (
        s.remote_seq_no + s.rx_buffer.len(),
        s.assembler.iter_data().collect(),
    )
}

impl Before {
    pub(super) fn of(s: &Socket) -> Before {
        let max_wnd = s.max_remote_win.max(s.remote_win_len);
        let probe = s.timer.is_zero_window_probe() as usize;
        Before {
            pipe: s.pipe(),
            una: s.local_seq_no,
            snd_wnd: s.remote_win_len,
            cwnd: cwnd(s),
            fast_recoveries: s.stats.fast_recoveries,
            timeouts: s.stats.timeouts,
            tail_loss_probes: s.stats.tail_loss_probes,
            first_retransmit: s.pending_fast_retransmit,
            probe: s.tlp_probe,
            dup_acks: s.local_rx_dup_acks,
            in_recovery: s.recovery_point.is_some(),
            received: received(s),
            ack_window: (s.local_seq_no - max_wnd, s.snd_max() + probe),
        }
    }
}

/// After `s` sent `len` octets of data at `seq` (`name` says which socket).
#[track_caller]
pub(super) fn check_send(name: &str, s: &Socket, before: &Before, seq: TcpSeqNumber, len: usize) {
    if len == 0 {
        return;
    }
    let mss = s.remote_mss;
    // A zero-window probe carries one octet past the window.
    let right_edge = before.una + before.snd_wnd;
    assert!(
        seq + len <= right_edge || (len == 1 && seq + len <= right_edge + 1),
        "{name}: {seq}+{len} beyond the peer's window {}+{}",
        before.una,
        before.snd_wnd
    );
    let window = cwnd(s);
    if window == usize::MAX {
        return;
    }
    // Recovery (RACK's timer) or the probe timer may have started in this
    // very step: then the segment sent is the first retransmission or the
    // probe, which go out whatever cwnd says and may only add themselves
    // to the flight.
    let recovery_began = s.stats.fast_recoveries > before.fast_recoveries;
    let probe_sent = s.stats.tail_loss_probes > before.tail_loss_probes;
    let allowed = if before.first_retransmit || recovery_began || before.probe || probe_sent {
        window.max(before.pipe) + len
    } else if !before.in_recovery && (1..=2).contains(&before.dup_acks) {
        // RFC 3042: outstanding data up to cwnd plus two segments.
        window.saturating_add(2 * mss)
    } else {
        window
    };
    let pipe = s.pipe();
    assert!(
        pipe <= allowed,
        "{name}: pipe {pipe} > cwnd {window} (allowed {allowed}) after {seq}+{len}; before: {before:?}"
    );
}

/// After a step of `s` (a segment processed, or its timers run): a loss
/// episode that began in it cut the window.
#[track_caller]
pub(super) fn check_episode(name: &str, s: &Socket, before: &Before) {
    let window = cwnd(s);
    // Without a congestion controller there is no window to cut; before
    // the handshake ends the peer's MSS is not known.
    if window == usize::MAX || !s.may_send_data() {
        return;
    }
    let mss = s.remote_mss;
    if s.stats.timeouts > before.timeouts {
        assert!(
            window <= mss,
            "{name}: timeout left cwnd {window} (was {})",
            before.cwnd
        );
    } else if s.stats.fast_recoveries > before.fast_recoveries {
        assert!(
            window < before.cwnd || window <= 2 * mss,
            "{name}: fast recovery left cwnd {window} (was {})",
            before.cwnd
        );
    }
}

/// After `s` processed a segment carrying `len` octets of data and `ack`:
/// with an ACK outside RFC 5961's window nothing of it was taken.
#[track_caller]
pub(super) fn check_receive(
    name: &str,
    s: &Socket,
    before: &Before,
    ack: Option<TcpSeqNumber>,
    len: usize,
) {
    check_episode(name, s, before);
    let Some(ack) = ack else {
        return;
    };
    let (low, high) = before.ack_window;
    if len > 0 && (ack < low || ack > high) {
        assert!(
            received(s) == before.received,
            "{name}: data taken with ACK {ack} outside {low}..={high}"
        );
    }
}

/// Everything of `s`'s sending side a segment from the peer can change,
/// and what it received: a segment that fails the acceptability tests
/// (a blind attacker's, who knows the 4-tuple but not the sequence
/// numbers) must leave all of it as it was.
pub(super) fn state(s: &Socket) -> impl PartialEq + core::fmt::Debug + use<> {
    (
        (s.local_seq_no, s.remote_last_seq, s.scoreboard, s.stats),
        (cwnd(s), s.recovery_point, s.rto_recovery_point, s.frto),
        (
            s.undo.is_some(),
            s.reordering_seen,
            s.reo_wnd_mult,
            s.rack_edge,
        ),
        (s.local_rx_dup_acks, s.remote_win_len, s.max_remote_win),
        (s.tlp_end_seq, s.rxt_lost, s.head_resend),
        received(s),
    )
}
