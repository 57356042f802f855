//! The sender's gather computes each FPDU's CRC as it copies the payload
//! (`Memory::read_via` with MPA's CRC as its copy hook); the octets on the wire are the ones framing the
//! same ULPDUs after the copy gives, CRC on and off, markers on and off.

use ddp::memory::Access;

use super::transport::ulpdus_with as ulpdus;
use super::util::{pattern, Pair, Setup};
use crate::connection::DEFAULT_MAX_INLINE;
use crate::work_request::{SendOp, SendWr, Sge};

/// The stream `ulpdus` become when each is framed whole by
/// `Framer::frame` (copy first, CRC over the FPDU after).
fn reframed(ulpdus: &[Vec<u8>], crc: bool, markers: bool) -> Vec<u8> {
    let mut framer = mpa::Framer::new(crc, markers);
    let mut out = Vec::new();
    for u in ulpdus {
        framer.frame_to_vec(u, &[], &mut out).expect("frames");
    }
    out
}

#[test]
fn gathered_fpdus_equal_the_ones_framed_after_the_copy() {
    for crc in [true, false] {
        for markers in [false, true] {
            let mut p = Pair::new(Setup {
                crc,
                markers,
                ..Setup::default()
            });
            let data = pattern(40_000, 5);
            // Sources in three regions, one SGE starting mid-region.
            let s1 = p.a.register(Access::REMOTE_READ, data[..7].to_vec());
            let s2 = p.a.register(Access::REMOTE_READ, data[7..20_001].to_vec());
            let s3 = p.a.register(Access::REMOTE_READ, data[20_001..].to_vec());
            let mid = Sge {
                to: p.a.sge(s3).to + 3,
                len: p.a.sge(s3).len - 3,
                ..p.a.sge(s3)
            };
            let sgl = vec![p.a.sge(s1), p.a.sge(s2), mid];
            let len = 40_000 - 3;
            let rx = p.b.register(Access::LOCAL_WRITE, vec![0; len]);
            let inline_rx =
                p.b.register(Access::LOCAL_WRITE, vec![0; DEFAULT_MAX_INLINE]);
            let dst = p.b.register(Access::REMOTE_WRITE, vec![0; len]);
            let sink = p.b.register(Access::LOCAL_WRITE, vec![0; 20_001 - 7]);
            let (r, ir, d, k) = (p.b.sge(rx), p.b.sge(inline_rx), p.b.sge(dst), p.b.sge(sink));
            p.b.recv(1, vec![r]);
            p.b.recv(2, vec![ir]);
            p.a.send(1, sgl.clone());
            p.a.write(2, sgl, d);
            let inline = pattern(DEFAULT_MAX_INLINE, 9);
            p.a.conn
                .post_send(SendWr {
                    wr_id: 3,
                    op: SendOp::Send {
                        solicited: false,
                        invalidate: None,
                    },
                    sgl: Vec::new(),
                    signaled: true,
                    fence: false,
                    inline: inline.clone(),
                })
                .unwrap();
            // Read Responses come from `a`'s region s2 through b's Read.
            p.b.read(4, k, p.a.sge(s2));
            p.drive();
            let mut want = data[..20_001].to_vec();
            want.extend_from_slice(&data[20_004..]);
            assert!(p.b.bytes(rx) == &want[..], "crc {crc} markers {markers}");
            assert!(p.b.bytes(dst) == &want[..]);
            assert_eq!(p.b.bytes(inline_rx), &inline[..]);
            assert!(p.b.bytes(sink) == &data[7..20_001]);
            for side in [&p.a, &p.b] {
                let u = ulpdus(&side.wire, crc, markers);
                assert!(!u.is_empty());
                assert!(
                    reframed(&u, crc, markers) == side.wire,
                    "crc {crc} markers {markers}"
                );
            }
        }
    }
}
