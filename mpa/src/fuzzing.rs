//! Property checks the fuzz targets run on arbitrary bytes
//! (`fuzz/fuzz_targets/mpa_*.rs`). Each panics when a property fails.

use core::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::framing::{Deframer, Framer};
use crate::negotiate::{CrcPolicy, InitiatorConfig, ReplyParams, ResponderConfig};
use crate::seq::StreamOffset;
use crate::startup::{Startup, StartupEvent};
use crate::wire::{FrameRepr, Rtr, RtrSet};

/// Reads configuration choices off the front of the input.
struct Choices<'a> {
    data: &'a [u8],
}

impl<'a> Choices<'a> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    fn rest(self) -> &'a [u8] {
        self.data
    }
}

fn crc_policy(b: u8) -> CrcPolicy {
    match b % 4 {
        0 => CrcPolicy::Off,
        1 => CrcPolicy::Preferred,
        2 => CrcPolicy::Required,
        _ => CrcPolicy::Never,
    }
}

fn rtr_set(b: u8) -> RtrSet {
    RtrSet {
        send: b & 1 != 0,
        write: b & 2 != 0,
        read: b & 4 != 0,
    }
}

fn initiator_config(c: &mut Choices<'_>) -> InitiatorConfig {
    let flags = c.byte();
    let rtr = rtr_set(c.byte());
    let rev = if flags & 0x80 != 0 { 1 } else { 2 };
    InitiatorConfig {
        rev,
        crc: crc_policy(flags),
        markers_rx: flags & 0x04 != 0,
        markers_tx: flags & 0x08 != 0,
        ird: c.u16() & 0x3fff,
        ord: c.u16() & 0x3fff,
        peer_to_peer: (rev == 2 && flags & 0x10 != 0 && !rtr.is_empty()).then_some(rtr),
        private_data: vec![0x5a; usize::from(c.byte()) % 64],
        reply_timeout: Duration::from_secs(10),
        accept_rev1_reply: flags & 0x20 != 0,
    }
}

fn responder_config(c: &mut Choices<'_>) -> ResponderConfig {
    let flags = c.byte();
    ResponderConfig {
        max_rev: if flags & 0x80 != 0 { 1 } else { 2 },
        crc: crc_policy(flags),
        markers_rx: flags & 0x04 != 0,
        markers_tx: flags & 0x08 != 0,
        rtr: rtr_set(c.byte()),
        request_timeout: Duration::from_secs(5),
    }
}

/// Feeds `stream` to `s` in chunks of `chunk` bytes, checking that no call
/// consumes more than it was given and that a short count only happens once
/// start-up is over. Returns the bytes consumed in all.
fn feed_chunks(s: &mut Startup, stream: &[u8], chunk: usize, now: Instant) -> usize {
    let mut at = 0;
    for piece in stream.chunks(chunk.max(1)) {
        match s.handle_bytes(piece, now) {
            Ok(n) => {
                assert!(n <= piece.len(), "consumed more than given");
                at += n;
                if n < piece.len() {
                    assert!(s.is_finished() || s.is_awaiting_decision());
                    break;
                }
            }
            Err(e) => {
                // Typed, with a code where the RFCs assign one, repeated.
                let _ = e.terminate_code();
                assert_eq!(s.error(), Some(e));
                assert_eq!(s.handle_bytes(piece, now), Err(e));
                break;
            }
        }
    }
    at
}

/// Checks that the frame at the start of `bytes` re-emits byte for byte.
fn reemits(bytes: &[u8]) {
    if let Ok((repr, len)) = FrameRepr::parse_bytes(bytes) {
        let again = repr.to_vec().expect("a parsed frame re-emits");
        assert_eq!(again, &bytes[..len]);
    }
}

/// Drives an Initiator and a Responder with `data` as the peer's stream,
/// cut into chunks, and then a whole conversation between configurations
/// chosen by `data`.
pub fn startup(data: &[u8]) {
    let mut c = Choices { data };
    let icfg = initiator_config(&mut c);
    let rcfg = responder_config(&mut c);
    let chunk = usize::from(c.byte()) + 1;
    let reply_params = ReplyParams {
        ird: c.u16() & 0x3fff,
        ord: c.u16() & 0x3fff,
        private_data: vec![0xa5; usize::from(c.byte()) % 32],
    };
    let stream = c.rest();
    let now = Instant::now();

    // The peer's bytes to an Initiator.
    if let Ok(mut init) = Startup::initiator(icfg.clone(), now) {
        let used = feed_chunks(&mut init, stream, chunk, now);
        assert!(used <= stream.len());
        reemits(&stream[..used]);
        if init.is_established() {
            let Some(StartupEvent::Established(n)) =
                core::iter::from_fn(|| init.poll_event()).last()
            else {
                panic!("established without the event");
            };
            assert!(n.ord <= icfg.ord);
        }
        init.handle_timeout(now + Duration::from_secs(11));
        assert!(init.is_finished());
    }

    // The peer's bytes to a Responder.
    if let Ok(mut resp) = Startup::responder(rcfg.clone(), now) {
        let used = feed_chunks(&mut resp, stream, chunk, now);
        reemits(&stream[..used]);
        if resp.is_awaiting_decision() && resp.accept(reply_params.clone(), now).is_ok() {
            let mut reply = Vec::new();
            resp.poll_transmit(&mut reply);
            reemits(&reply);
            assert!(FrameRepr::parse_bytes(&reply).is_ok());
        }
        let mut out = Vec::new();
        resp.poll_transmit(&mut out);
        reemits(&out);
    }

    // Both ends talking to each other must agree.
    let (Ok(mut init), Ok(mut resp)) =
        (Startup::initiator(icfg, now), Startup::responder(rcfg, now))
    else {
        return;
    };
    let mut request = Vec::new();
    init.poll_transmit(&mut request);
    let _ = feed_chunks(&mut resp, &request, chunk, now);
    if resp.is_awaiting_decision() {
        let _ = resp.accept(reply_params, now);
    }
    let mut reply = Vec::new();
    resp.poll_transmit(&mut reply);
    let _ = feed_chunks(&mut init, &reply, chunk, now);
    if let (Some(a), Some(b)) = (init.negotiated(), resp.negotiated()) {
        if init.is_established() && resp.is_established() {
            assert_eq!(a.crc, b.crc);
            assert_eq!(a.rev, b.rev);
            assert_eq!(a.markers_tx, b.markers_rx);
            assert_eq!(a.markers_rx, b.markers_tx);
            assert_eq!(a.rtr, b.rtr);
            assert!(a.ord <= b.ird || a.peer_ird_ord.is_none());
            assert!(b.ord <= a.ird || b.peer_ird_ord.is_none());
            if let Some(rtr) = a.rtr {
                assert!(matches!(rtr, Rtr::Send | Rtr::Write | Rtr::Read));
            }
        }
    }
}

/// Deframes arbitrary bytes, then frames ULPDUs cut from `data` and checks
/// they come back whole through arbitrary cuts, and that a flipped bit with
/// CRC on never yields a wrong ULPDU.
pub fn deframer(data: &[u8]) {
    let mut c = Choices { data };
    let flags = c.byte();
    let crc = flags & 1 != 0;
    let markers = flags & 2 != 0;
    let chunk = usize::from(c.byte()) + 1;
    let max_ulpdu = usize::from(c.u16());
    let start = StreamOffset(u32::from(c.u16()) << 2);
    let flip = usize::from(c.u16());
    let rest = c.rest();

    // 1. Arbitrary bytes: all consumed or an error, ULPDUs within the cap.
    let mut d = Deframer::at(crc, markers, max_ulpdu, start);
    for piece in rest.chunks(chunk) {
        match d.feed(piece, |u| {
            assert!(u.len() <= max_ulpdu);
            ControlFlow::Continue(())
        }) {
            // The callback never breaks, so a clean feed takes it all.
            Ok(n) => assert_eq!(n, piece.len(), "a clean feed left bytes"),
            Err(e) => {
                let _ = e.terminate_code();
                assert_eq!(d.feed(piece, |_| ControlFlow::Continue(())), Err(e));
                break;
            }
        }
    }

    // 2. ULPDUs cut from the data: lengths from one byte each.
    let mut ulpdus = Vec::new();
    let mut bytes = rest;
    while let Some((&len, tail)) = bytes.split_first() {
        let len = usize::from(len) * 7 % 1500;
        let n = len.min(tail.len());
        ulpdus.push(&tail[..n]);
        bytes = &tail[n..];
    }
    let mut framer = Framer::at(crc, markers, start);
    let mut stream = Vec::new();
    for u in &ulpdus {
        let split = u.len().min(14);
        framer
            .frame_to_vec(&u[..split], &u[split..], &mut stream)
            .expect("ULPDUs under 1500 bytes frame");
    }
    let deframe = |stream: &[u8]| {
        let mut d = Deframer::at(crc, markers, 65535, start);
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut err = None;
        for piece in stream.chunks(chunk) {
            match d.feed(piece, |u| {
                got.push(u.to_vec());
                ControlFlow::Continue(())
            }) {
                Ok(n) => assert_eq!(n, piece.len()),
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        (got, err, d.is_idle())
    };
    let (got, err, idle) = deframe(&stream);
    assert_eq!(err, None);
    assert!(idle);
    assert_eq!(got.len(), ulpdus.len());
    for (a, b) in got.iter().zip(&ulpdus) {
        assert_eq!(a, b);
    }

    // 3. One flipped bit with CRC on: never a wrong ULPDU.
    if crc && !stream.is_empty() {
        let bit = flip % (stream.len() * 8);
        let mut bad = stream.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let (got, err, idle) = deframe(&bad);
        assert!(got.len() < ulpdus.len());
        for (a, b) in got.iter().zip(&ulpdus) {
            assert_eq!(a, b);
        }
        assert!(err.is_some() || !idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_inputs() {
        startup(&[]);
        deframer(&[]);
    }

    #[test]
    fn a_valid_reply_as_the_stream() {
        let mut data = vec![0x01, 0x02, 0, 1, 0, 1, 0, 0x01, 0x02, 200, 0, 1, 0, 1, 0];
        data.extend_from_slice(b"MPA ID Rep Frame");
        data.extend_from_slice(&[0x50, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01, 0xff]);
        startup(&data);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn startup_properties_hold(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            startup(&data);
        }

        #[test]
        fn deframer_properties_hold(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            deframer(&data);
        }
    }
}
