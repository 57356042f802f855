//! Which queue pair each transport stream belongs to, both ways, so news
//! from a stream finds its queue pair and destroying a queue pair forgets
//! its streams without a scan of every stream.

use std::collections::HashMap;

use crate::transport::{LocalKeys, StreamId};

#[derive(Debug, Default)]
pub(super) struct StreamOwners {
    owner: HashMap<StreamId, u32, LocalKeys>,
    streams: HashMap<u32, Vec<StreamId>, LocalKeys>,
}

impl StreamOwners {
    /// News from `stream` is for queue pair `qp` from now on.
    pub(super) fn bind(&mut self, stream: StreamId, qp: u32) {
        if let Some(old) = self.owner.insert(stream, qp) {
            if old != qp {
                self.unlist(old, stream);
            }
        }
        let list = self.streams.entry(qp).or_default();
        if !list.contains(&stream) {
            list.push(stream);
        }
    }

    /// The queue pair `stream` belongs to.
    pub(super) fn owner(&self, stream: StreamId) -> Option<u32> {
        self.owner.get(&stream).copied()
    }

    /// Forgets every stream of queue pair `qp`.
    pub(super) fn forget_qp(&mut self, qp: u32) {
        for stream in self.streams.remove(&qp).unwrap_or_default() {
            self.owner.remove(&stream);
        }
    }

    fn unlist(&mut self, qp: u32, stream: StreamId) {
        if let Some(list) = self.streams.get_mut(&qp) {
            list.retain(|&s| s != stream);
            if list.is_empty() {
                self.streams.remove(&qp);
            }
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.owner.len()
    }

    /// Every stream is listed under its owner and nowhere else.
    #[cfg(test)]
    pub(super) fn consistent(&self) -> bool {
        let listed: usize = self.streams.values().map(Vec::len).sum();
        listed == self.owner.len()
            && self
                .streams
                .iter()
                .all(|(&qp, list)| list.iter().all(|s| self.owner(*s) == Some(qp)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::memory::{MemoryLink, MemoryLinkConfig};
    use crate::transport::Transport;

    /// `n` distinct stream ids (connections never answered).
    fn streams(n: usize) -> Vec<StreamId> {
        let cfg = MemoryLinkConfig::default();
        let (mut a, _b) = MemoryLink::pair(&cfg).unwrap();
        (0..n)
            .map(|_| a.connect(cfg.endpoint_b(9)).unwrap())
            .collect()
    }

    #[test]
    fn forgetting_a_queue_pair_leaves_the_others() {
        let s = streams(3);
        let mut o = StreamOwners::default();
        o.bind(s[0], 7);
        o.bind(s[1], 8);
        o.bind(s[2], 7);
        o.forget_qp(7);
        assert_eq!(o.owner(s[0]), None);
        assert_eq!(o.owner(s[2]), None);
        assert_eq!(o.owner(s[1]), Some(8));
        assert!(o.consistent());
    }

    #[test]
    fn a_stream_bound_again_moves_to_its_new_owner() {
        let s = streams(1)[0];
        let mut o = StreamOwners::default();
        o.bind(s, 7);
        o.bind(s, 7);
        o.bind(s, 9);
        assert_eq!(o.owner(s), Some(9));
        assert!(o.consistent());
        o.forget_qp(7);
        assert_eq!(o.owner(s), Some(9), "7 no longer owns it");
        o.forget_qp(9);
        assert_eq!(o.len(), 0);
        assert!(o.consistent());
    }
}
