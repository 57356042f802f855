//! End-to-end RDMA over smoltcp on the in-memory link.

mod common;

use common::*;
use verbs::{wr, Access, WcOpcode, WcStatus};

#[test]
fn send_write_read_round_trip() {
    let p = memory_pair();
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let c_buf = p.client_pd.register_vec(pattern(10_000, 1), all).unwrap();
    let s_buf = p.server_pd.register(10_000, all).unwrap();

    // Send: server posts a receive, client sends.
    p.server_qp
        .post_recv(wr::recv(1, vec![s_buf.sge(0, 10_000).unwrap()]))
        .unwrap();
    p.client_qp
        .post_send(wr::send(2, vec![c_buf.sge(0, 5000).unwrap()]))
        .unwrap();
    let s = p.server_completions(1);
    assert_eq!(
        (s[0].wr_id, s[0].status, s[0].opcode, s[0].byte_len),
        (1, WcStatus::Success, WcOpcode::Recv, 5000)
    );
    let c = p.client_completions(1);
    assert_eq!(
        (c[0].wr_id, c[0].status, c[0].opcode),
        (2, WcStatus::Success, WcOpcode::Send)
    );
    assert_eq!(s_buf.to_vec()[..5000], pattern(10_000, 1)[..5000]);

    // Write: client writes its whole buffer into the server's.
    p.client_qp
        .post_send(wr::write(
            3,
            vec![c_buf.sge_all()],
            s_buf.rkey(),
            s_buf.addr(),
        ))
        .unwrap();
    let c = p.client_completions(1);
    assert_eq!(
        (c[0].wr_id, c[0].status, c[0].opcode),
        (3, WcStatus::Success, WcOpcode::RdmaWrite)
    );
    p.drive_until(|_| s_buf.to_vec() == pattern(10_000, 1));

    // Read: server reads the client's buffer back into a fresh region.
    let sink = p.server_pd.register(10_000, Access::LOCAL_WRITE).unwrap();
    p.server_qp
        .post_send(wr::read(4, sink.sge_all(), c_buf.rkey(), c_buf.addr()))
        .unwrap();
    let s = p.server_completions(1);
    assert_eq!(
        (s[0].wr_id, s[0].status, s[0].opcode, s[0].byte_len),
        (4, WcStatus::Success, WcOpcode::RdmaRead, 10_000)
    );
    assert_eq!(sink.to_vec(), pattern(10_000, 1));
}
