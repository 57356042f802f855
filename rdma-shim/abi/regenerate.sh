#!/bin/sh
# Regenerates src/sys.rs from the installed rdma-core headers (Debian's
# `bindgen` package). Run from rdma-shim/; then `cargo test -p iwarp-rdma-shim --test layout`.
set -e
{
  sed -n '1,/^$/p' src/sys.rs
  bindgen abi/headers.h --no-layout-tests --no-doc-comments --use-core --ctypes-prefix libc \
    --default-enum-style consts --no-prepend-enum-name --size_t-is-usize \
    --allowlist-type 'ibv_(device|context|context_ops|pd|mr|cq|comp_channel|qp|srq|wc|send_wr|recv_wr|sge|qp_init_attr|qp_attr|qp_cap|device_attr|port_attr|gid|ah_attr|global_route|srq_init_attr|srq_attr|async_event|wc_opcode|wc_status|wr_opcode|qp_state|qp_type|mtu|port_state|node_type|transport_type|access_flags|send_flags|qp_attr_mask|atomic_cap|mig_state|event_type|device_attr_ex|query_device_ex_input|srq_attr_mask|wc_flags|cq_init_attr_ex|cq_ex|qp_init_attr_ex|gid_entry|values_ex)' \
    --allowlist-type 'verbs_(context|device)' --allowlist-type '_compat_ibv_port_attr' \
    --allowlist-type 'rdma_(cm_id|event_channel|cm_event|cm_event_type|conn_param|ud_param|addr|route|addrinfo|port_space|cm_join_mc_attr_ex)' \
    --allowlist-var 'IBV_.*|RDMA_.*|RAI_.*' -- -I/usr/include
} > src/sys.rs.new
mv src/sys.rs.new src/sys.rs
