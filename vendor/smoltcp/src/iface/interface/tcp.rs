use super::*;

use crate::socket::tcp::Socket;

impl InterfaceInner {
    pub(crate) fn process_tcp<'frame>(
        &mut self,
        sockets: &mut SocketSet,
        handled_by_raw_socket: bool,
        ip_repr: IpRepr,
        ip_payload: &'frame [u8],
    ) -> Option<Packet<'frame>> {
        let (src_addr, dst_addr) = (ip_repr.src_addr(), ip_repr.dst_addr());

        // Per RFC 1122 §3.2.1.3, the unspecified address must never appear as a source
        // or destination in any IP datagram. Drop such TCP segments early to avoid
        // creating sockets with unspecified peers (which would later panic on egress).
        // This is not done at the iface level because it might be useful with
        // UDP or raw sockets, but it's definitely not useful for TCP.
        if src_addr.is_unspecified() || dst_addr.is_unspecified() {
            return None;
        }

        let tcp_packet = check!(TcpPacket::new_checked(ip_payload));
        let tcp_repr = check!(TcpRepr::parse(
            &tcp_packet,
            &src_addr,
            &dst_addr,
            &self.caps.checksum
        ));

        // The socket that last took this connection's segments, else the
        // first that accepts (iwarp patch, see `iface/ready.rs`).
        let key = (
            IpEndpoint::new(dst_addr, tcp_repr.dst_port),
            IpEndpoint::new(src_addr, tcp_repr.src_port),
        );
        let mut accepts = |sockets: &SocketSet, index: usize| {
            sockets
                .item_at(index)
                .and_then(|i| Socket::downcast(&i.socket))
                .is_some_and(|s| s.accepts(self, &ip_repr, &tcp_repr))
        };
        let (found, cached) = match sockets.ready.lookup(&key) {
            Some(index) if accepts(sockets, index) => (Some(index), true),
            _ => (
                (0..sockets.slot_count()).find(|&index| accepts(sockets, index)),
                false,
            ),
        };
        if let Some(index) = found
            && let Some(tcp_socket) = sockets
                .item_at_mut(index)
                .and_then(|i| Socket::downcast_mut(&mut i.socket))
        {
            let reply = tcp_socket.process(self, &ip_repr, &tcp_repr);
            // A socket found by the walk (a listener that took a SYN, a
            // connection's first segment) is found directly from now on.
            let tuple = tcp_socket.local_endpoint().zip(tcp_socket.remote_endpoint());
            if let (false, Some(tuple)) = (cached, tuple) {
                sockets.ready.remember(index, tuple);
            }
            sockets.ready.mark(index);
            sockets.ready.touch(index);
            return reply.map(|(ip, tcp)| Packet::new(ip, IpPayload::Tcp(tcp)));
        }

        if tcp_repr.control == TcpControl::Rst
            || ip_repr.dst_addr().is_unspecified()
            || ip_repr.src_addr().is_unspecified()
            || handled_by_raw_socket
        {
            // Never reply to a TCP RST packet with another TCP RST packet.
            // Never send a TCP RST packet with unspecified addresses.
            // Never send a TCP RST when packet has been handled by raw socket.
            None
        } else {
            // The packet wasn't handled by a socket, send a TCP RST packet.
            let (ip, tcp) = tcp::Socket::rst_reply(&ip_repr, &tcp_repr);
            Some(Packet::new(ip, IpPayload::Tcp(tcp)))
        }
    }
}
