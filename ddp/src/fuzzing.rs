//! Property checks the fuzz targets run (`fuzz/fuzz_targets/ddp_*.rs`).
//! They panic when a property fails: that is how a fuzzer sees a finding.

use crate::memory::{Access, Memory, PdId, RegionTable, STag};
use crate::tagged::place_tagged;
use crate::untagged::{Placed, Sge, UntaggedQueues, QN_SEND};
use crate::wire::{parse_segment, Segment, SegmentRepr, TaggedRepr, UntaggedRepr};

/// Parses arbitrary bytes as one DDP segment. Whatever parses must re-emit
/// to exactly the bytes it came from, and the views must agree with it.
pub fn headers(data: &[u8]) {
    let Ok((repr, payload)) = parse_segment(data) else {
        return;
    };
    let n = repr.buffer_len();
    assert!(n <= data.len());
    let mut out = vec![0xa5u8; n + 3];
    assert_eq!(repr.emit(&mut out), Ok(n));
    assert_eq!(&out[..n], &data[..n], "emit(parse(x)) differs from x");
    assert_eq!(&out[n..], &[0xa5; 3], "emit wrote past the header");
    assert_eq!(payload, &data[n..]);
    let seg = Segment::new_checked(data).expect("parsed, so the view checks");
    assert_eq!(seg.header(), &data[..n]);
    assert_eq!(seg.payload(), payload);
    assert_eq!(seg.rsvd_ulp(), repr.rsvd_ulp());
    assert_eq!(seg.control().last, repr.last());
    assert_eq!(SegmentRepr::parse(&seg), Ok(repr));
}

/// Reads fuzz input as numbers, yielding zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, _| (v << 8) | u64::from(self.u8()))
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.u8()).collect()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

const QP_PD: PdId = PdId(0);
const MAX_OPS: usize = 256;
const REGIONS: usize = 3;

/// Every byte of every region that was ever registered.
fn snapshot(mem: &RegionTable) -> Vec<Option<Vec<u8>>> {
    (0..REGIONS)
        .map(|i| mem.bytes(stag_of(i)).map(<[u8]>::to_vec))
        .collect()
}

fn stag_of(i: usize) -> STag {
    STag::new(i as u32 + 1, 0)
}

/// Bytes `(region, offset)` a scatter of message bytes `from..from + len`
/// into `sgl` must write, in message order.
fn scatter_targets(mem: &RegionTable, sgl: &[Sge], from: usize, len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut msg_off = 0usize;
    for s in sgl {
        for k in 0..s.len as usize {
            if msg_off >= from && msg_off < from + len {
                let i = (0..REGIONS).find(|&i| stag_of(i) == s.stag).expect("known");
                let base = mem.region(s.stag).expect("placed, so valid").base;
                out.push((i, (s.to + k as u64 - base) as usize));
            }
            msg_off += 1;
        }
    }
    out
}

/// Registers a few regions from the first bytes, then runs the rest as
/// tagged and untagged segments, posts and deregistrations. Checks that no
/// byte outside the targeted range changes, that an accepted placement wrote
/// exactly its payload where it belongs, and that a refusal wrote nothing.
pub fn placement(data: &[u8]) {
    run_placement(data);
}

/// [`placement`], returning how many tagged and untagged placements were
/// accepted, so seed tests can tell inputs that reach placement from ones
/// refused at the first check.
pub fn placement_accepted(data: &[u8]) -> (usize, usize) {
    let (_, tagged, untagged) = run_placement(data);
    (tagged, untagged)
}

/// [`placement`], returning the memory and how many placements were
/// accepted (tagged, untagged), so tests can tell a run did something.
fn run_placement(data: &[u8]) -> (RegionTable, usize, usize) {
    let mut accepted = (0, 0);
    let mut input = Input(data);
    let mut mem = RegionTable::new();
    let mut bases = [0u64; REGIONS];
    for (i, base_slot) in bases.iter_mut().enumerate() {
        let len = usize::from(input.u8() % 32) + 32;
        let base = match input.u8() % 4 {
            0 => 0,
            1 => 0x1000 * (i as u64 + 1),
            2 => u64::MAX - len as u64 + 1,
            _ => input.u64(),
        };
        let access = match input.u8() {
            a if a % 4 == 0 => Access::from_bits_truncate(u32::from(a >> 2)),
            _ => Access::ALL,
        };
        let pd = PdId(u32::from(input.u8() % 4 == 0));
        *base_slot = base;
        mem.register(stag_of(i), pd, base, access, vec![0xa5; len], true);
    }
    let mut queues = UntaggedQueues::rdmap(4, 3);
    // Mirror of queue 0: posted SGLs in order, bytes of the active message.
    let mut posted: Vec<Vec<Sge>> = Vec::new();
    let mut placed = 0u32;
    let mut next_id = 0u64;

    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let before = snapshot(&mem);
        match input.u8() % 8 {
            0..=2 => {
                let pick = usize::from(input.u8()) % (REGIONS + 1);
                let stag = if pick == REGIONS {
                    STag(u32::from(input.u16()))
                } else {
                    stag_of(pick)
                };
                let to = match input.u8() % 3 {
                    0 => bases[pick % REGIONS].wrapping_add(u64::from(input.u8() % 64)),
                    1 => bases[pick % REGIONS].wrapping_sub(u64::from(input.u8() % 4)),
                    _ => input.u64(),
                };
                let len = usize::from(input.u8() % 32);
                let payload = input.bytes(len);
                let need = if input.u8() & 1 == 0 {
                    Access::REMOTE_WRITE
                } else {
                    Access::LOCAL_WRITE
                };
                let repr = TaggedRepr::new(true, 0x40, stag, to);
                let ok = place_tagged(&mut mem, QP_PD, &repr, &payload, need).is_ok();
                accepted.0 += usize::from(ok && !payload.is_empty());
                let after = snapshot(&mem);
                for i in 0..REGIONS {
                    let (old, new) = (&before[i], &after[i]);
                    if ok && !payload.is_empty() && stag_of(i) == stag {
                        let (old, new) =
                            (old.as_ref().expect("valid"), new.as_ref().expect("valid"));
                        let off = usize::try_from(to - bases[i]).expect("in bounds");
                        let end = off + payload.len();
                        assert_eq!(&new[off..end], &payload[..], "payload misplaced");
                        assert_eq!(&new[..off], &old[..off], "wrote before the target");
                        assert_eq!(&new[end..], &old[end..], "wrote after the target");
                    } else {
                        assert_eq!(old, new, "a refused or empty placement wrote");
                    }
                }
            }
            3 | 4 => {
                let qn = u32::from(input.u8() % 8).saturating_sub(4);
                let expected = queues.queue(qn).map_or(1, |q| q.expected_msn());
                let msn = expected.wrapping_add(u32::from(input.u8() % 8 / 6));
                let mo = placed.wrapping_add(u32::from(input.u8() % 8 / 6));
                let len = usize::from(input.u8() % 24);
                let payload = input.bytes(len);
                let last = input.u8() & 1 == 1;
                let repr = UntaggedRepr::new(last, 0x43, 0, qn, msn, mo);
                let result = queues.place(&mut mem, QP_PD, &repr, &payload);
                let after = snapshot(&mem);
                let mut expect = before.clone();
                match result {
                    Ok(Placed::Partial { .. } | Placed::Complete(_)) => {
                        assert_eq!(qn, QN_SEND);
                        accepted.1 += 1;
                        let sgl = posted.first().expect("a buffer was posted");
                        let targets = scatter_targets(&mem, sgl, placed as usize, len);
                        assert_eq!(targets.len(), len, "scatter lost bytes");
                        for ((i, off), &b) in targets.into_iter().zip(&payload) {
                            if let Some(Some(bytes)) = expect.get_mut(i) {
                                bytes[off] = b;
                            }
                        }
                        placed += len as u32;
                        if last {
                            posted.remove(0);
                            placed = 0;
                        }
                    }
                    Ok(Placed::Inline { .. }) => assert_ne!(qn, QN_SEND),
                    Err(_) => {}
                }
                assert_eq!(after, expect, "untagged placement wrote outside its SGEs");
            }
            5 | 6 => {
                let n = usize::from(input.u8() % 4);
                let sgl: Vec<Sge> = (0..n)
                    .map(|_| {
                        let pick = usize::from(input.u8()) % REGIONS;
                        Sge {
                            stag: stag_of(pick),
                            to: bases[pick].wrapping_add(u64::from(input.u8() % 20)),
                            len: u32::from(input.u8() % 16),
                        }
                    })
                    .collect();
                if queues.post(QN_SEND, next_id, &sgl).is_ok() {
                    posted.push(sgl);
                }
                next_id += 1;
                assert_eq!(snapshot(&mem), before, "posting wrote memory");
            }
            _ => {
                // Deregister a region under the posted buffers' feet; the
                // next placement into it must be refused, not performed.
                let pick = input.u8();
                if pick % 4 == 0 {
                    mem.deregister(stag_of(usize::from(pick >> 2) % REGIONS));
                }
            }
        }
    }
    (mem, accepted.0, accepted.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headers_accepts_capture_bytes() {
        // rping-default.pcap frame 13 (RDMA Write header + 2 payload bytes)
        // and frame 9 (Read Request header).
        headers(&[
            0xc1, 0x40, 0x02, 0xfd, 0x5f, 0x00, 0x00, 0x00, 0x55, 0x80, 0x8d, 0xd2, 0x85, 0x50,
            b'r', b'd',
        ]);
        headers(&[0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
        headers(&[]);
        headers(&[0xff; 40]);
    }

    #[test]
    fn placement_runs_a_scripted_exchange() {
        // Regions: 32 bytes at 0x1000, 0x2000, 0x3000; all rights, PD 0.
        let mut d = vec![0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1];
        // Post an SGL: 2 SGEs (region 0 + 4, 6 bytes) (region 1 + 0, 10).
        d.extend_from_slice(&[5, 2, 0, 4, 6, 1, 0, 10]);
        // Untagged QN 0 (byte 4), MSN +0, MO +0, 12 bytes, last.
        d.extend_from_slice(&[3, 4, 0, 0, 12]);
        d.extend_from_slice(b"hello world!");
        d.push(1);
        // Tagged Write to region 2 at base + 3, 4 bytes.
        d.extend_from_slice(&[0, 2, 0, 3, 4]);
        d.extend_from_slice(b"abcd");
        d.push(0);
        let (mem, tagged, untagged) = run_placement(&d);
        assert_eq!((tagged, untagged), (1, 1));
        let r0 = mem.bytes(stag_of(0)).unwrap();
        let r1 = mem.bytes(stag_of(1)).unwrap();
        let r2 = mem.bytes(stag_of(2)).unwrap();
        assert_eq!(&r0[4..10], b"hello ");
        assert_eq!(&r1[..6], b"world!");
        assert_eq!(&r2[3..7], b"abcd");
        assert_eq!(r0[..4], [0xa5; 4]);
        assert_eq!(r2[..3], [0xa5; 3]);
    }

    #[test]
    fn random_runs_do_accept_placements() {
        // A fuzzer that only ever sees refusals checks little: make sure
        // plain random input reaches accepted placements of both kinds.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let (mut tagged, mut untagged) = (0, 0);
        for _ in 0..300 {
            let data: Vec<u8> = (0..400)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let (_, t, u) = run_placement(&data);
            tagged += t;
            untagged += u;
        }
        assert!(tagged > 50, "{tagged} tagged placements accepted");
        assert!(untagged > 50, "{untagged} untagged placements accepted");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn headers_holds_for_random_input(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            headers(&data);
        }

        #[test]
        fn placement_holds_for_random_input(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            placement(&data);
        }
    }
}
