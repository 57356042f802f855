//! How fast DDP receive processing runs on this machine: header parsing,
//! tagged placement and untagged reassembly of 1428-byte segments (what
//! siw sends over a 1500-byte MTU), through the reference `RegionTable`.
//!
//! `cargo run --release -p iwarp-ddp --example placement_rate`

use std::time::Instant;

use ddp::memory::{Access, PdId, RegionTable, STag};
use ddp::segment::{Segmenter, TaggedSegments, UntaggedSegments};
use ddp::tagged::{place_tagged, TaggedSequence};
use ddp::untagged::{Placed, Sge, UntaggedQueues, QN_SEND};
use ddp::{parse_segment, SegmentRepr};

const MULPDU: usize = 1442;
const MESSAGE: u32 = 1 << 20;
const ROUNDS: usize = 512;

/// Builds the ULPDUs of one message from its headers and payload.
fn ulpdus(
    headers: impl Iterator<Item = (SegmentRepr, std::ops::Range<usize>)>,
    msg: &[u8],
) -> Vec<Vec<u8>> {
    headers
        .map(|(repr, range)| {
            let mut u = vec![0; repr.buffer_len() + range.len()];
            let n = repr.emit(&mut u).unwrap();
            u[n..].copy_from_slice(&msg[range]);
            u
        })
        .collect()
}

fn report(what: &str, bytes: usize, segments: usize, t: Instant) {
    let s = t.elapsed().as_secs_f64();
    let rate = if bytes == 0 {
        "(headers only)".to_string()
    } else {
        format!("{:.0} MB/s", bytes as f64 / s / 1e6)
    };
    println!(
        "{what:<28} {rate:>14} {:>7.2} M segments/s",
        segments as f64 / s / 1e6
    );
}

fn main() {
    let pd = PdId(1);
    let sink = STag::new(1, 0);
    let msg: Vec<u8> = (0..MESSAGE).map(|i| i as u8).collect();

    let tagged = ulpdus(
        TaggedSegments::new(
            Segmenter::tagged(MESSAGE, MULPDU).unwrap(),
            0x40,
            sink,
            0x10_0000,
        )
        .map(|(r, range)| (SegmentRepr::Tagged(r), range)),
        &msg,
    );
    let untagged = ulpdus(
        UntaggedSegments::new(
            Segmenter::untagged(MESSAGE, MULPDU).unwrap(),
            0x43,
            0,
            QN_SEND,
            1,
        )
        .map(|(r, range)| (SegmentRepr::Untagged(r), range)),
        &msg,
    );

    let t = Instant::now();
    let mut n = 0usize;
    for _ in 0..ROUNDS {
        for u in &tagged {
            n += parse_segment(std::hint::black_box(u)).unwrap().1.len();
        }
    }
    assert_eq!(n, ROUNDS * MESSAGE as usize);
    report("parse (tagged)", 0, ROUNDS * tagged.len(), t);

    let mut mem = RegionTable::new();
    mem.register(
        sink,
        pd,
        0x10_0000,
        Access::ALL,
        vec![0; MESSAGE as usize],
        false,
    );
    let mut seq = TaggedSequence::new();
    let t = Instant::now();
    for _ in 0..ROUNDS {
        for u in &tagged {
            let (SegmentRepr::Tagged(r), p) = parse_segment(u).unwrap() else {
                unreachable!()
            };
            seq.accept(&r, p.len()).unwrap();
            place_tagged(&mut mem, pd, &r, p, Access::REMOTE_WRITE).unwrap();
        }
    }
    report(
        "parse + tagged placement",
        ROUNDS * MESSAGE as usize,
        ROUNDS * tagged.len(),
        t,
    );
    assert_eq!(mem.bytes(sink).unwrap(), &msg[..]);

    let rbuf = STag::new(2, 0);
    mem.register(
        rbuf,
        pd,
        0,
        Access::LOCAL_WRITE,
        vec![0; MESSAGE as usize],
        false,
    );
    let mut queues = UntaggedQueues::rdmap(4, 4);
    // Four SGEs of a quarter message each: the scatter crosses SGEs.
    let quarter = MESSAGE / 4;
    let sgl: Vec<Sge> = (0..4)
        .map(|i| Sge {
            stag: rbuf,
            to: u64::from(i * quarter),
            len: quarter,
        })
        .collect();
    let t = Instant::now();
    let mut completions = 0;
    for round in 0..ROUNDS {
        queues.post(QN_SEND, round as u64, &sgl).unwrap();
        for u in &untagged {
            let (SegmentRepr::Untagged(mut r), p) = parse_segment(u).unwrap() else {
                unreachable!()
            };
            r.msn = round as u32 + 1;
            if let Placed::Complete(_) = queues.place(&mut mem, pd, &r, p).unwrap() {
                completions += 1;
            }
        }
    }
    report(
        "parse + untagged reassembly",
        ROUNDS * MESSAGE as usize,
        ROUNDS * untagged.len(),
        t,
    );
    assert_eq!(completions, ROUNDS);
    assert_eq!(mem.bytes(rbuf).unwrap(), &msg[..]);
}
